-- SQLite corpus for the sql grammar's sqlite dialect: 70 queries, one per line.
-- Written for cfgmask (issue 11), in the style of BIRD / TPC-H text-to-SQL questions over
-- made-up schemas (a football league with a table named Match and a mountain table with a
-- column Range, a bank, TPC-H's orders/lineitem, a school, a superhero database). Not copied
-- from BIRD, Spider or TPC-H. Every query prepares in SQLite 3.40 without a syntax error
-- (tests/test_sql_dialects.py::test_corpus_is_valid_for_its_engine).
SELECT COUNT(*) FROM Match WHERE season = '2015/2016'
SELECT T1.home_team_goal, T1.away_team_goal FROM Match AS T1 INNER JOIN League AS T2 ON T1.league_id = T2.id WHERE T2.name = 'Belgium Jupiler League' AND T1.date LIKE '2008%'
SELECT T2.name FROM Match AS T1 JOIN League AS T2 ON T2.id = T1.league_id GROUP BY T2.name ORDER BY COUNT(T1.id) DESC LIMIT 1
SELECT Name FROM mountain WHERE Range = 'Alps' ORDER BY Height DESC
SELECT Range, COUNT(*) FROM mountain GROUP BY Range HAVING COUNT(*) > 2
SELECT DISTINCT Range FROM mountain WHERE Height BETWEEN 3000 AND 4000
SELECT CAST(SUM(CASE WHEN T1.home_team_goal > T1.away_team_goal THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(T1.id) FROM Match AS T1 WHERE T1.season = '2010/2011'
SELECT player_name FROM Player WHERE height > 180 AND strftime('%Y', birthday) = '1990'
SELECT AVG(T2.overall_rating) FROM Player AS T1 INNER JOIN Player_Attributes AS T2 ON T1.player_api_id = T2.player_api_id WHERE T1.player_name = 'Gabriel Tamas'
SELECT t.team_long_name FROM Team AS t WHERE t.team_api_id IN (SELECT home_team_api_id FROM Match WHERE home_team_goal >= 8)
SELECT COUNT(DISTINCT T1.account_id) FROM account AS T1 JOIN district AS T2 ON T1.district_id = T2.district_id WHERE T2.A3 = 'Prague'
SELECT T1.client_id FROM client AS T1 JOIN disp AS T2 ON T1.client_id = T2.client_id WHERE T2.type = 'OWNER' AND T1.gender = 'F' ORDER BY T1.birth_date ASC LIMIT 5
SELECT strftime('%Y', date) AS year, SUM(amount) FROM trans WHERE type = 'PRIJEM' GROUP BY year ORDER BY year
SELECT account_id FROM loan WHERE status IN ('A', 'C') AND duration = 24 AND date BETWEEN '1996-01-01' AND '1996-12-31'
SELECT CAST(COUNT(CASE WHEN gender = 'M' THEN 1 END) AS REAL) / COUNT(*) FROM client
SELECT d.A2, AVG(l.amount) FROM loan l JOIN account a ON a.account_id = l.account_id JOIN district d ON d.district_id = a.district_id GROUP BY d.A2
SELECT IIF(balance < 0, 'negative', 'positive') AS sign, COUNT(*) FROM trans GROUP BY sign
SELECT julianday('1998-12-01') - julianday(MIN(date)) FROM trans
SELECT l_returnflag, l_linestatus, SUM(l_quantity) AS sum_qty, SUM(l_extendedprice * (1 - l_discount)) AS sum_disc_price, AVG(l_discount) AS avg_disc, COUNT(*) AS count_order FROM lineitem WHERE l_shipdate <= date('1998-12-01', '-90 days') GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus
SELECT o_orderpriority, COUNT(*) AS order_count FROM orders WHERE o_orderdate >= '1993-07-01' AND o_orderdate < date('1993-07-01', '+3 months') AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority ORDER BY o_orderpriority
SELECT n_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue FROM customer, orders, lineitem, supplier, nation, region WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'ASIA' GROUP BY n_name ORDER BY revenue DESC
SELECT SUM(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE l_shipdate >= '1994-01-01' AND l_shipdate < '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24
SELECT strftime('%Y', o_orderdate) AS o_year, SUM(CASE WHEN n_name = 'BRAZIL' THEN l_extendedprice ELSE 0 END) / SUM(l_extendedprice) AS mkt_share FROM orders JOIN lineitem ON l_orderkey = o_orderkey JOIN nation ON n_nationkey = o_custkey GROUP BY o_year
SELECT c_custkey, c_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE l_returnflag = 'R' GROUP BY c_custkey, c_name ORDER BY revenue DESC LIMIT 20
SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS value FROM partsupp GROUP BY ps_partkey HAVING SUM(ps_supplycost * ps_availqty) > (SELECT SUM(ps_supplycost * ps_availqty) * 0.0001 FROM partsupp)
SELECT l_shipmode, SUM(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') GROUP BY l_shipmode
SELECT c_count, COUNT(*) AS custdist FROM (SELECT c_custkey, COUNT(o_orderkey) AS c_count FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) AS c_orders GROUP BY c_count ORDER BY custdist DESC, c_count DESC
SELECT 100.00 * SUM(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / SUM(l_extendedprice * (1 - l_discount)) AS promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey
SELECT s_name, s_address FROM supplier WHERE s_suppkey IN (SELECT ps_suppkey FROM partsupp WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%')) ORDER BY s_name
SELECT substr(c_phone, 1, 2) AS cntrycode, COUNT(*) AS numcust, SUM(c_acctbal) AS totacctbal FROM customer WHERE substr(c_phone, 1, 2) IN ('13', '31', '23') GROUP BY cntrycode ORDER BY cntrycode
SELECT T1.first_name, T1.last_name FROM student AS T1 WHERE T1.gpa = (SELECT MAX(gpa) FROM student)
SELECT course_name FROM course WHERE course_id NOT IN (SELECT course_id FROM registration)
SELECT T2.dept_name, COUNT(*) FROM instructor AS T1 JOIN department AS T2 ON T1.dept_id = T2.dept_id GROUP BY T2.dept_name ORDER BY COUNT(*) DESC
SELECT student_id, RANK() OVER (ORDER BY gpa DESC) AS rnk FROM student
SELECT student_id, gpa, AVG(gpa) OVER (PARTITION BY major ORDER BY gpa ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM student
WITH top AS (SELECT major, MAX(gpa) AS best FROM student GROUP BY major) SELECT s.first_name, t.major FROM student s JOIN top t ON s.major = t.major AND s.gpa = t.best
SELECT first_name || ' ' || last_name AS full_name FROM student WHERE email LIKE '%@uni.edu'
SELECT COUNT(*) FROM registration WHERE grade IS NULL
SELECT major, ROUND(AVG(gpa), 2) FROM student GROUP BY major HAVING AVG(gpa) > 3.0 ORDER BY 2 DESC
SELECT superhero_name FROM superhero WHERE height_cm BETWEEN 170 AND 190 AND eye_colour_id = (SELECT id FROM colour WHERE colour = 'Blue')
SELECT T2.power_name FROM hero_power AS T1 INNER JOIN superpower AS T2 ON T1.power_id = T2.id INNER JOIN superhero AS T3 ON T3.id = T1.hero_id WHERE T3.superhero_name = 'Abomination'
SELECT COUNT(T1.id) FROM superhero AS T1 WHERE T1.publisher_id = (SELECT id FROM publisher WHERE publisher_name = 'Marvel Comics') AND T1.weight_kg > 100
SELECT "superhero_name", "full_name" FROM "superhero" WHERE "full_name" IS NOT NULL LIMIT 10
SELECT `Free Meal Count (K-12)` / `Enrollment (K-12)` FROM frpm WHERE `County Name` = 'Alameda' ORDER BY 1 DESC LIMIT 3
SELECT [School Name], [Zip] FROM schools WHERE [County] = 'Fresno' AND [Virtual] = 'F'
SELECT T1.School FROM schools AS T1 INNER JOIN satscores AS T2 ON T1.CDSCode = T2.cds WHERE T2.AvgScrMath > 560 AND T1.Charter = 1
SELECT COUNT(*) FROM schools WHERE OpenDate > '2000-01-01' AND (StatusType = 'Active' OR StatusType = 'Merged')
SELECT MAX(Range) - MIN(Range) FROM mountain
SELECT key, value FROM settings WHERE key NOT LIKE 'tmp_%' ORDER BY key
SELECT id, first, last FROM names WHERE first = last
SELECT T1.name FROM Match AS T1 WHERE T1.name GLOB 'A*'
SELECT * FROM Match NATURAL JOIN Team WHERE Team.short_name = 'GEN'
SELECT COUNT(*) FROM (SELECT DISTINCT home_team_api_id FROM Match UNION SELECT DISTINCT away_team_api_id FROM Match)
SELECT date, home_team_goal + away_team_goal AS goals FROM Match ORDER BY goals DESC, date LIMIT 5 OFFSET 5
SELECT country_id, COUNT(*) FILTER (WHERE home_team_goal = 0) FROM Match GROUP BY country_id
SELECT lower(team_short_name), length(team_long_name) FROM Team WHERE team_fifa_api_id IS NOT NULL
SELECT COALESCE(nickname, player_name) FROM Player LIMIT 20
SELECT player_name, NULLIF(height, 0) FROM Player WHERE weight > 200
SELECT T.buildUpPlaySpeedClass, COUNT(*) FROM Team_Attributes AS T GROUP BY 1
SELECT a.account_id, SUM(t.amount) AS total FROM account a LEFT JOIN trans t USING (account_id) GROUP BY a.account_id HAVING total > 100000
SELECT frequency, COUNT(*) FROM account WHERE date LIKE '199_-%' GROUP BY frequency
SELECT T1.card_id FROM card AS T1 WHERE T1.type = 'gold' AND T1.issued < '1998-01-01' EXCEPT SELECT card_id FROM card WHERE type = 'classic'
SELECT district_id FROM district WHERE A11 > 10000 INTERSECT SELECT district_id FROM account
SELECT CASE WHEN A12 > A13 THEN 'up' WHEN A12 < A13 THEN 'down' ELSE 'same' END, COUNT(*) FROM district GROUP BY 1
SELECT printf('%.2f', AVG(amount)) FROM loan WHERE status = 'D'
SELECT MAX(T2.amount) FROM client T1, loan T2 WHERE T1.client_id = T2.account_id AND T1.gender = 'M';
SELECT o_orderkey, o_totalprice FROM orders WHERE o_totalprice > ALL_PRICE LIMIT 10
SELECT p_brand, p_type, p_size, COUNT(DISTINCT ps_suppkey) AS supplier_cnt FROM partsupp, part WHERE p_partkey = ps_partkey AND p_brand <> 'Brand#45' AND p_type NOT LIKE 'MEDIUM POLISHED%' AND p_size IN (49, 14, 23, 45) GROUP BY p_brand, p_type, p_size ORDER BY supplier_cnt DESC
SELECT SUM(l_extendedprice) / 7.0 AS avg_yearly FROM lineitem, part WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND l_quantity < (SELECT 0.2 * AVG(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)
SELECT superhero_name, ROW_NUMBER() OVER (PARTITION BY publisher_id ORDER BY height_cm DESC) AS pos FROM superhero
SELECT s.superhero_name FROM superhero s WHERE NOT EXISTS (SELECT 1 FROM hero_power hp WHERE hp.hero_id = s.id)
SELECT COUNT(*) FROM superhero WHERE full_name LIKE '%-%' ESCAPE '\'
SELECT instr(full_name, ' ') FROM superhero WHERE id < 10;  -- first space
