-- PostgreSQL corpus for the sql grammar's postgres dialect: 72 queries, one per line.
-- Written for cfgmask (issue 11), in the style of BIRD (PostgreSQL form) and TPC-H
-- text-to-SQL questions over made-up schemas (football league, bank, TPC-H tables, school,
-- superheroes). Not copied from BIRD, Spider or TPC-H. Every query parses with pglast
-- (PostgreSQL 17's parser; tests/test_sql_dialects.py::test_corpus_is_valid_for_its_engine).
SELECT COUNT(*) FROM "Match" WHERE season = '2015/2016'
SELECT EXTRACT(YEAR FROM m.date) AS year, COUNT(*) FROM match AS m GROUP BY EXTRACT(YEAR FROM m.date) ORDER BY year
SELECT name FROM mountain WHERE range = 'Alps' ORDER BY height DESC NULLS LAST
SELECT range, COUNT(*) FROM mountain GROUP BY range HAVING COUNT(*) > 2
SELECT CAST(SUM(CASE WHEN home_team_goal > away_team_goal THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(id) FROM match WHERE season = '2010/2011'
SELECT player_name FROM player WHERE height > 180 AND EXTRACT(YEAR FROM birthday::date) = 1990
SELECT AVG(pa.overall_rating)::numeric(10, 2) FROM player p JOIN player_attributes pa ON p.player_api_id = pa.player_api_id WHERE p.player_name ILIKE 'gabriel%'
SELECT DISTINCT ON (league_id) league_id, date, home_team_goal + away_team_goal AS goals FROM match ORDER BY league_id, goals DESC
SELECT t.team_long_name FROM team t WHERE t.team_api_id IN (SELECT home_team_api_id FROM match WHERE home_team_goal >= 8)
SELECT COUNT(DISTINCT a.account_id) FROM account a JOIN district d ON a.district_id = d.district_id WHERE d.a3 = 'Prague'
SELECT c.client_id FROM client c JOIN disp d ON c.client_id = d.client_id WHERE d.type = 'OWNER' AND c.gender = 'F' ORDER BY c.birth_date LIMIT 5
SELECT date_part('year', date) AS year, SUM(amount) FROM trans WHERE type = 'PRIJEM' GROUP BY 1 ORDER BY 1
SELECT account_id FROM loan WHERE status IN ('A', 'C') AND duration = 24 AND date BETWEEN DATE '1996-01-01' AND DATE '1996-12-31'
SELECT COUNT(*) FILTER (WHERE gender = 'M')::float / COUNT(*) FROM client
SELECT d.a2, ROUND(AVG(l.amount), 2) FROM loan l JOIN account a ON a.account_id = l.account_id JOIN district d ON d.district_id = a.district_id GROUP BY d.a2
SELECT date '1998-12-01' - MIN(date) FROM trans
SELECT l_returnflag, l_linestatus, SUM(l_quantity) AS sum_qty, SUM(l_extendedprice * (1 - l_discount)) AS sum_disc_price, AVG(l_discount) AS avg_disc, COUNT(*) AS count_order FROM lineitem WHERE l_shipdate <= date '1998-12-01' - interval '90' day GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus
SELECT o_orderpriority, COUNT(*) AS order_count FROM orders WHERE o_orderdate >= date '1993-07-01' AND o_orderdate < date '1993-07-01' + interval '3' month AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority ORDER BY o_orderpriority
SELECT n_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue FROM customer, orders, lineitem, supplier, nation, region WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'ASIA' AND o_orderdate >= date '1994-01-01' AND o_orderdate < date '1994-01-01' + interval '1' year GROUP BY n_name ORDER BY revenue DESC
SELECT SUM(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1994-01-01' + interval '1' year AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24
SELECT o_year, SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / SUM(volume) AS mkt_share FROM (SELECT extract(year FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation FROM part, supplier, lineitem, orders, nation n2 WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey AND s_nationkey = n2.n_nationkey) AS all_nations GROUP BY o_year ORDER BY o_year
SELECT c_custkey, c_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE l_returnflag = 'R' AND o_orderdate >= date '1993-10-01' AND o_orderdate < date '1993-10-01' + interval '3' month GROUP BY c_custkey, c_name ORDER BY revenue DESC FETCH FIRST 20 ROWS ONLY
SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS value FROM partsupp GROUP BY ps_partkey HAVING SUM(ps_supplycost * ps_availqty) > (SELECT SUM(ps_supplycost * ps_availqty) * 0.0001 FROM partsupp) ORDER BY value DESC
SELECT c_count, COUNT(*) AS custdist FROM (SELECT c_custkey, COUNT(o_orderkey) FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) AS c_orders (c_custkey, c_count) GROUP BY c_count ORDER BY custdist DESC, c_count DESC
SELECT 100.00 * SUM(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / SUM(l_extendedprice * (1 - l_discount)) AS promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey AND l_shipdate >= date '1995-09-01' AND l_shipdate < date '1995-09-01' + interval '1' month
SELECT substring(c_phone FROM 1 FOR 2) AS cntrycode, COUNT(*) AS numcust, SUM(c_acctbal) AS totacctbal FROM customer WHERE substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23') GROUP BY cntrycode ORDER BY cntrycode
SELECT s_name, s_address FROM supplier, nation WHERE s_suppkey IN (SELECT ps_suppkey FROM partsupp WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%')) AND s_nationkey = n_nationkey AND n_name = 'CANADA' ORDER BY s_name
SELECT SUM(l_extendedprice) / 7.0 AS avg_yearly FROM lineitem, part WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND l_quantity < (SELECT 0.2 * AVG(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)
SELECT first_name, last_name FROM student WHERE gpa = (SELECT MAX(gpa) FROM student)
SELECT course_name FROM course WHERE course_id NOT IN (SELECT course_id FROM registration)
SELECT d.dept_name, COUNT(*) FROM instructor i JOIN department d ON i.dept_id = d.dept_id GROUP BY d.dept_name ORDER BY COUNT(*) DESC
SELECT student_id, RANK() OVER (ORDER BY gpa DESC) AS rnk FROM student
SELECT student_id, gpa, AVG(gpa) OVER (PARTITION BY major ORDER BY gpa ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM student
SELECT student_id, SUM(credits) OVER w FROM registration WINDOW w AS (PARTITION BY student_id ORDER BY term RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
WITH top AS (SELECT major, MAX(gpa) AS best FROM student GROUP BY major) SELECT s.first_name, t.major FROM student s JOIN top t ON s.major = t.major AND s.gpa = t.best
SELECT first_name || ' ' || last_name AS full_name FROM student WHERE email ILIKE '%@uni.edu'
SELECT major, ROUND(AVG(gpa)::numeric, 2) FROM student GROUP BY major HAVING AVG(gpa) > 3.0 ORDER BY 2 DESC
SELECT string_agg(first_name, ', ' ORDER BY first_name) FROM student WHERE major = 'Physics'
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY gpa) FROM student
SELECT superhero_name FROM superhero WHERE height_cm BETWEEN 170 AND 190 AND eye_colour_id = (SELECT id FROM colour WHERE colour = 'Blue')
SELECT sp.power_name FROM hero_power hp JOIN superpower sp ON hp.power_id = sp.id JOIN superhero s ON s.id = hp.hero_id WHERE s.superhero_name = 'Abomination'
SELECT "superhero_name", "full_name" FROM "superhero" WHERE "full_name" IS NOT NULL LIMIT 10 OFFSET 10
SELECT "Free Meal Count (K-12)" / NULLIF("Enrollment (K-12)", 0) FROM frpm WHERE "County Name" = 'Alameda' ORDER BY 1 DESC NULLS LAST LIMIT 3
SELECT school FROM schools s JOIN satscores sc ON s.cdscode = sc.cds WHERE sc.avgscrmath > 560 AND s.charter = 1
SELECT COUNT(*) FROM schools WHERE opendate > DATE '2000-01-01' AND (statustype = 'Active' OR statustype = 'Merged')
SELECT RIGHT(cdscode, 4), LEFT(school, 10) FROM schools WHERE county = 'Fresno'
SELECT now() - interval '1 day', CURRENT_DATE, CURRENT_TIMESTAMP, LOCALTIMESTAMP
SELECT date_trunc('month', date) AS month, COUNT(*) FROM trans GROUP BY 1 ORDER BY 1
SELECT to_char(birthday, 'YYYY') AS y, COUNT(*) FROM player GROUP BY y
SELECT position('a' IN player_name), upper(player_name), length(player_name) FROM player
SELECT trim(BOTH ' ' FROM team_long_name) FROM team
SELECT COALESCE(nickname, player_name), GREATEST(height, 150), LEAST(weight, 300) FROM player
SELECT COUNT(*) FROM (SELECT DISTINCT home_team_api_id FROM match UNION SELECT DISTINCT away_team_api_id FROM match) AS teams
SELECT date, home_team_goal + away_team_goal AS goals FROM match ORDER BY goals DESC, date OFFSET 5 LIMIT 5
SELECT card_id FROM card WHERE type = 'gold' AND issued < '1998-01-01'::date EXCEPT SELECT card_id FROM card WHERE type = 'classic'
SELECT district_id FROM district WHERE a11 > 10000 INTERSECT SELECT district_id FROM account
SELECT CASE WHEN a12 > a13 THEN 'up' WHEN a12 < a13 THEN 'down' ELSE 'same' END AS trend, COUNT(*) FROM district GROUP BY trend
SELECT a.account_id, SUM(t.amount) AS total FROM account a LEFT JOIN trans t USING (account_id) GROUP BY a.account_id HAVING SUM(t.amount) > 100000
SELECT * FROM trans WHERE amount > ANY (SELECT amount FROM loan WHERE status = 'D')
SELECT t.k_symbol FROM trans t WHERE t.k_symbol IS DISTINCT FROM 'SIPO'
SELECT superhero_name, ROW_NUMBER() OVER (PARTITION BY publisher_id ORDER BY height_cm DESC NULLS LAST) AS pos FROM superhero
SELECT s.superhero_name FROM superhero s WHERE NOT EXISTS (SELECT 1 FROM hero_power hp WHERE hp.hero_id = s.id)
SELECT full_name FROM superhero WHERE full_name ~ '^[A-Z]' AND full_name !~* 'x'
SELECT x FROM generate_series(1, 10) AS g(x)
SELECT s.id, p.n FROM superhero s CROSS JOIN LATERAL (SELECT COUNT(*) AS n FROM hero_power hp WHERE hp.hero_id = s.id) p
SELECT $$it's a string$$, E'tab\there', 'plain'
SELECT interval '2 hours 30 minutes', timestamp '2020-01-01 10:00:00' + interval '1' hour
SELECT CAST(height AS double precision) / 100, weight::int FROM player
INSERT INTO student (first_name, last_name, gpa) VALUES ('Ann', 'Lee', 3.5) RETURNING student_id
UPDATE account SET frequency = 'POPLATEK MESICNE' WHERE account_id = 1 RETURNING *
DELETE FROM registration WHERE grade IS NULL RETURNING student_id, course_id;
INSERT INTO course (course_id, course_name) VALUES (1, 'Math') ON CONFLICT (course_id) DO UPDATE SET course_name = 'Math'
SELECT COUNT(*) FROM match WHERE date >= CURRENT_DATE - 30 AND season LIKE '2015%'
