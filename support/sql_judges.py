"""The engines that judge the SQL dialects: does the engine's own parser refuse a statement?

* sqlite: Python's sqlite3, ``EXPLAIN <statement>`` on an empty in-memory
  database; "syntax error", "unrecognized token" and "incomplete input" are
  syntax errors, "no such table" and the like are not.
* postgres: pglast (PostgreSQL's parser through libpg_query); every
  ``ParseError`` is a syntax error (pglast does no name resolution).
* mysql: MariaDB (Debian's mariadb-server), ``PREPARE s FROM '<statement>'``
  in an empty database; error 1064 (ER_PARSE_ERROR) and 4161 (unknown data
  type, raised by the parser) are syntax errors, unknown tables and functions
  are not.  The server is the one at ``$CFGMASK_MARIADB_SOCKET``; without
  one, a private server is started in a temporary directory (a few seconds)
  when ``mariadbd`` and PyMySQL are installed, and stopped at exit.

``get(dialect)`` returns a judge, or ``None`` when its engine is missing
(tests then skip with :func:`missing_reason`).
"""

import atexit
import functools
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time


class SQLiteJudge:
    name = "SQLite %s (sqlite3 EXPLAIN)" % sqlite3.sqlite_version

    def __init__(self):
        self.con = sqlite3.connect(":memory:")

    def syntax_error(self, sql):
        try:
            self.con.execute("EXPLAIN " + sql)
        except sqlite3.Warning as e:  # more than one statement
            return str(e)
        except sqlite3.Error as e:
            msg = str(e)
            if any(s in msg for s in ("syntax error", "unrecognized token", "incomplete input")):
                return msg
        return None


class PostgresJudge:
    def __init__(self):
        import pglast
        self.pglast = pglast
        self.name = "pglast %s (PostgreSQL parser)" % getattr(pglast, "__version__", "?")

    def syntax_error(self, sql):
        try:
            stmts = self.pglast.parser.parse_sql(sql)
        except self.pglast.parser.ParseError as e:
            return str(e)
        if len(stmts) != 1:
            return "%d statements" % len(stmts)
        return None


MYSQL_SYNTAX_ERRORS = (1064, 4161)


class MariaDBJudge:
    def __init__(self, socket):
        import pymysql
        self.pymysql = pymysql
        self.con = pymysql.connect(unix_socket=socket, user="root", autocommit=True)
        cur = self.con.cursor()
        cur.execute("SELECT VERSION()")
        self.name = "MariaDB %s (PREPARE)" % cur.fetchone()[0]
        cur.execute("CREATE DATABASE IF NOT EXISTS cfgmask_judge")
        cur.execute("USE cfgmask_judge")
        self.cur = cur

    def syntax_error(self, sql):
        try:
            self.cur.execute("PREPARE s FROM %s", (sql,))
        except self.pymysql.MySQLError as e:
            if e.args and e.args[0] in MYSQL_SYNTAX_ERRORS:
                return "%s: %s" % e.args[:2]
            if e.args and e.args[0] in (2006, 2013):  # the server went away
                raise
        return None

    def keywords(self):
        self.cur.execute("SELECT WORD FROM information_schema.KEYWORDS")
        return sorted({r[0].upper() for r in self.cur.fetchall() if r[0].replace("_", "").isalnum()})


_reasons = {}


def _start_mariadb():
    mariadbd = shutil.which("mariadbd") or ("/usr/sbin/mariadbd" if os.path.exists("/usr/sbin/mariadbd") else None)
    install = shutil.which("mariadb-install-db")
    if not mariadbd or not install:
        raise RuntimeError("no mariadbd (apt-get install mariadb-server) and no $CFGMASK_MARIADB_SOCKET")
    d = tempfile.mkdtemp(prefix="cfgmask-mariadb-")
    subprocess.run([install, "--no-defaults", "--datadir=" + d + "/data", "--auth-root-authentication-method=normal",
                    "--skip-test-db"], check=True, capture_output=True, timeout=120)
    sock = d + "/sock"
    args = [mariadbd, "--no-defaults", "--datadir=" + d + "/data", "--socket=" + sock, "--skip-networking",
            "--skip-grant-tables", "--innodb-buffer-pool-size=16M", "--performance-schema=OFF"]
    if os.geteuid() == 0:
        args.append("--user=root")
    log = open(d + "/server.log", "w")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def stop():
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(d, ignore_errors=True)
    atexit.register(stop)
    for _ in range(300):
        if os.path.exists(sock):
            return sock
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError("mariadbd did not start (see %s/server.log)" % d)


@functools.lru_cache(maxsize=None)
def get(dialect):
    try:
        if dialect == "sqlite":
            return SQLiteJudge()
        if dialect == "postgres":
            return PostgresJudge()
        if dialect == "mysql":
            import pymysql  # noqa: F401
            sock = os.environ.get("CFGMASK_MARIADB_SOCKET") or _start_mariadb()
            return MariaDBJudge(sock)
    except Exception as e:  # the engine is missing: the caller skips
        _reasons[dialect] = "%s: %s" % (type(e).__name__, e)
        return None
    raise ValueError(dialect)


def missing_reason(dialect):
    return "no %s judge: %s" % (dialect, _reasons.get(dialect, "unavailable"))
