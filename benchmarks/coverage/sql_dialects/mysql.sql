-- MySQL corpus for the sql grammar's mysql dialect: 72 queries, one per line.
-- Written for cfgmask (issue 11), in the style of BIRD (MySQL form) and TPC-H text-to-SQL
-- questions over made-up schemas (football league, bank, TPC-H tables, school, superheroes).
-- Not copied from BIRD, Spider or TPC-H. Every query passes MariaDB 10.11's PREPARE without
-- a syntax error (tests/test_sql_dialects.py::test_corpus_is_valid_for_its_engine).
SELECT COUNT(*) FROM `Match` WHERE season = '2015/2016'
SELECT YEAR(m.date) AS year, COUNT(*) FROM `Match` AS m GROUP BY YEAR(m.date) ORDER BY year
SELECT `Name` FROM mountain WHERE `Range` = 'Alps' ORDER BY Height DESC
SELECT `Range`, COUNT(*) FROM mountain GROUP BY `Range` HAVING COUNT(*) > 2
SELECT CAST(SUM(CASE WHEN home_team_goal > away_team_goal THEN 1 ELSE 0 END) AS DECIMAL(10, 2)) * 100 / COUNT(id) FROM `Match` WHERE season = '2010/2011'
SELECT player_name FROM Player WHERE height > 180 AND DATE_FORMAT(birthday, '%Y') = '1990'
SELECT AVG(pa.overall_rating) FROM Player p JOIN Player_Attributes pa ON p.player_api_id = pa.player_api_id WHERE p.player_name LIKE 'Gabriel%'
SELECT t.team_long_name FROM Team t WHERE t.team_api_id IN (SELECT home_team_api_id FROM `Match` WHERE home_team_goal >= 8)
SELECT COUNT(DISTINCT a.account_id) FROM account a JOIN district d ON a.district_id = d.district_id WHERE d.A3 = 'Prague'
SELECT c.client_id FROM client c JOIN disp d ON c.client_id = d.client_id WHERE d.type = 'OWNER' AND c.gender = 'F' ORDER BY c.birth_date LIMIT 5
SELECT YEAR(date) AS y, SUM(amount) FROM trans WHERE type = 'PRIJEM' GROUP BY y ORDER BY y
SELECT account_id FROM loan WHERE status IN ('A', 'C') AND duration = 24 AND date BETWEEN '1996-01-01' AND '1996-12-31'
SELECT SUM(gender = 'M') / COUNT(*) FROM client
SELECT d.A2, ROUND(AVG(l.amount), 2) FROM loan l JOIN account a ON a.account_id = l.account_id JOIN district d ON d.district_id = a.district_id GROUP BY d.A2
SELECT DATEDIFF('1998-12-01', MIN(date)) FROM trans
SELECT l_returnflag, l_linestatus, SUM(l_quantity) AS sum_qty, SUM(l_extendedprice * (1 - l_discount)) AS sum_disc_price, AVG(l_discount) AS avg_disc, COUNT(*) AS count_order FROM lineitem WHERE l_shipdate <= DATE_SUB('1998-12-01', INTERVAL 90 DAY) GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus
SELECT o_orderpriority, COUNT(*) AS order_count FROM orders WHERE o_orderdate >= DATE '1993-07-01' AND o_orderdate < DATE '1993-07-01' + INTERVAL 3 MONTH AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority ORDER BY o_orderpriority
SELECT n_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue FROM customer, orders, lineitem, supplier, nation, region WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'ASIA' AND o_orderdate >= '1994-01-01' AND o_orderdate < DATE_ADD('1994-01-01', INTERVAL 1 YEAR) GROUP BY n_name ORDER BY revenue DESC
SELECT SUM(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE l_shipdate >= '1994-01-01' AND l_shipdate < '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24
SELECT o_year, SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / SUM(volume) AS mkt_share FROM (SELECT EXTRACT(YEAR FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation FROM part, supplier, lineitem, orders, nation n2 WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey AND s_nationkey = n2.n_nationkey) AS all_nations GROUP BY o_year ORDER BY o_year
SELECT c_custkey, c_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE l_returnflag = 'R' GROUP BY c_custkey, c_name ORDER BY revenue DESC LIMIT 20
SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS value FROM partsupp GROUP BY ps_partkey HAVING SUM(ps_supplycost * ps_availqty) > (SELECT SUM(ps_supplycost * ps_availqty) * 0.0001 FROM partsupp) ORDER BY value DESC
SELECT c_count, COUNT(*) AS custdist FROM (SELECT c_custkey, COUNT(o_orderkey) AS c_count FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) AS c_orders GROUP BY c_count ORDER BY custdist DESC, c_count DESC
SELECT 100.00 * SUM(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / SUM(l_extendedprice * (1 - l_discount)) AS promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey AND l_shipdate >= '1995-09-01' AND l_shipdate < '1995-09-01' + INTERVAL 1 MONTH
SELECT SUBSTRING(c_phone, 1, 2) AS cntrycode, COUNT(*) AS numcust, SUM(c_acctbal) AS totacctbal FROM customer WHERE SUBSTRING(c_phone FROM 1 FOR 2) IN ('13', '31', '23') GROUP BY cntrycode ORDER BY cntrycode
SELECT s_name, s_address FROM supplier WHERE s_suppkey IN (SELECT ps_suppkey FROM partsupp WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%')) ORDER BY s_name
SELECT SUM(l_extendedprice) / 7.0 AS avg_yearly FROM lineitem, part WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND l_quantity < (SELECT 0.2 * AVG(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)
SELECT first_name, last_name FROM student WHERE gpa = (SELECT MAX(gpa) FROM student)
SELECT course_name FROM course WHERE course_id NOT IN (SELECT course_id FROM registration)
SELECT d.dept_name, COUNT(*) FROM instructor i JOIN department d ON i.dept_id = d.dept_id GROUP BY d.dept_name ORDER BY COUNT(*) DESC
SELECT student_id, RANK() OVER (ORDER BY gpa DESC) AS rnk FROM student
SELECT student_id, gpa, AVG(gpa) OVER (PARTITION BY major ORDER BY gpa ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM student
WITH top AS (SELECT major, MAX(gpa) AS best FROM student GROUP BY major) SELECT s.first_name, t.major FROM student s JOIN top t ON s.major = t.major AND s.gpa = t.best
SELECT CONCAT(first_name, ' ', last_name) AS full_name FROM student WHERE email LIKE '%@uni.edu'
SELECT major, ROUND(AVG(gpa), 2) FROM student GROUP BY major HAVING AVG(gpa) > 3.0 ORDER BY 2 DESC
SELECT GROUP_CONCAT(first_name ORDER BY first_name SEPARATOR ', ') FROM student WHERE major = 'Physics'
SELECT superhero_name FROM superhero WHERE height_cm BETWEEN 170 AND 190 AND eye_colour_id = (SELECT id FROM colour WHERE colour = 'Blue')
SELECT sp.power_name FROM hero_power hp JOIN superpower sp ON hp.power_id = sp.id JOIN superhero s ON s.id = hp.hero_id WHERE s.superhero_name = 'Abomination'
SELECT superhero_name, full_name FROM superhero WHERE full_name IS NOT NULL LIMIT 10, 10
SELECT `Free Meal Count (K-12)` / `Enrollment (K-12)` FROM frpm WHERE `County Name` = 'Alameda' ORDER BY 1 DESC LIMIT 3
SELECT School FROM schools s JOIN satscores sc ON s.CDSCode = sc.cds WHERE sc.AvgScrMath > 560 AND s.Charter = 1
SELECT COUNT(*) FROM schools WHERE OpenDate > '2000-01-01' AND (StatusType = 'Active' OR StatusType = 'Merged')
SELECT RIGHT(CDSCode, 4), LEFT(School, 10) FROM schools WHERE County = "Fresno"
SELECT NOW() - INTERVAL 1 DAY, CURDATE(), CURRENT_TIMESTAMP(), CURRENT_DATE
SELECT DATE_FORMAT(CAST(CURRENT_TIMESTAMP() AS DATETIME), '%Y')
SELECT DATE_FORMAT(date, '%Y-%m') AS month, COUNT(*) FROM trans GROUP BY month ORDER BY month
SELECT LOCATE('a', player_name), UPPER(player_name), CHAR_LENGTH(player_name) FROM Player
SELECT TRIM(BOTH ' ' FROM team_long_name) FROM Team
SELECT IFNULL(nickname, player_name), GREATEST(height, 150), LEAST(weight, 300) FROM Player
SELECT COUNT(*) FROM (SELECT DISTINCT home_team_api_id FROM `Match` UNION SELECT DISTINCT away_team_api_id FROM `Match`) AS teams
SELECT date, home_team_goal + away_team_goal AS goals FROM `Match` ORDER BY goals DESC, date LIMIT 5 OFFSET 5
SELECT CASE WHEN A12 > A13 THEN 'up' WHEN A12 < A13 THEN 'down' ELSE 'same' END AS trend, COUNT(*) FROM district GROUP BY trend
SELECT a.account_id, SUM(t.amount) AS total FROM account a LEFT JOIN trans t USING (account_id) GROUP BY a.account_id HAVING total > 100000
SELECT IF(balance < 0, 'negative', 'positive') AS sign, COUNT(*) FROM trans GROUP BY sign
SELECT * FROM trans WHERE amount > ANY (SELECT amount FROM loan WHERE status = 'D')
SELECT superhero_name, ROW_NUMBER() OVER (PARTITION BY publisher_id ORDER BY height_cm DESC) AS pos FROM superhero
SELECT s.superhero_name FROM superhero s WHERE NOT EXISTS (SELECT 1 FROM hero_power hp WHERE hp.hero_id = s.id)
SELECT full_name FROM superhero WHERE full_name REGEXP '^[A-Z]' AND full_name NOT RLIKE 'x'
SELECT height_cm DIV 10, weight_kg MOD 7, height_cm % 3 FROM superhero
SELECT TIMESTAMPDIFF(YEAR, birth_date, '2020-01-01') AS age FROM client WHERE gender = 'M'
SELECT @total := SUM(amount) FROM loan
SELECT @rank, @@session.sql_mode
SELECT CONVERT(amount, CHAR), CAST(duration AS UNSIGNED), CAST(date AS DATE) FROM loan
SELECT 'it\'s', "say \"hi\"", 'back\\slash' FROM dual
SELECT a.district_id, COUNT(*) FROM account a GROUP BY a.district_id WITH ROLLUP
SELECT * FROM account a STRAIGHT_JOIN district d ON a.district_id = d.district_id
SELECT x <=> NULL, y IS TRUE FROM t1 -- null-safe comparison
SELECT COUNT(*) FROM `Match` # all matches
INSERT INTO student (first_name, last_name, gpa) VALUES ('Ann', 'Lee', 3.5)
INSERT INTO course (course_id, course_name) VALUES (1, 'Math') ON DUPLICATE KEY UPDATE course_name = 'Math'
UPDATE account SET frequency = 'POPLATEK MESICNE' WHERE account_id = 1 LIMIT 1
DELETE FROM registration WHERE grade IS NULL ORDER BY student_id LIMIT 100;
REPLACE INTO course (course_id, course_name) VALUES (2, 'Art')
