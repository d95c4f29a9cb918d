"""The demo's prompt library: six prompts each for JSON, SQL and JavaScript.

``PROMPTS[grammar]`` is a list of :class:`Prompt`.  A SQL prompt carries its
table schema twice: in the text the model reads, and as ``schema`` (the same
``CREATE TABLE`` statements), which the SQL judge loads before preparing the
model's query, so a query over a table or column the prompt does not have
fails.  ``reference`` is a correct answer, used by the tests to check that
the schema and the judge work (never shown to the model).

``SYSTEM[grammar]`` is the system message ``cfgmask generate`` and
``cfgmask demo`` use for a builtin grammar: a small model given only a
question answers in prose, and telling it the format up front gets it to open
a real document.
"""

from dataclasses import dataclass

__all__ = ["Prompt", "PROMPTS", "SYSTEM"]

SYSTEM = {
    "json": "You are a helpful assistant. Reply with JSON only.",
    "sql": "You are a helpful assistant. Reply with one SQLite query only.",
    "javascript": "You are a helpful assistant. Reply with JavaScript code only.",
}


@dataclass(frozen=True)
class Prompt:
    """One demo prompt: ``text`` for the model; SQL: ``schema`` for the judge."""

    text: str
    schema: str = ""
    reference: str = ""


def _sql(schema, question, reference):
    return Prompt(text=f"{schema}\n\n{question}", schema=schema, reference=reference)


PROMPTS = {
    "json": [
        Prompt("Describe a cat as JSON."),
        Prompt("Give me a JSON object with the name, capital and population of France."),
        Prompt("List three primary colors as a JSON array."),
        Prompt("Return a JSON object for a book: title, author, year, and a list of genres."),
        Prompt("Make a JSON shopping list with items and quantities."),
        Prompt("Write a JSON user profile with id, username, email and an is_active flag."),
    ],
    "sql": [
        _sql("CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);",
             "Write a SQL query that lists the names of singers older than 30, oldest first.",
             "SELECT name FROM singer WHERE age > 30 ORDER BY age DESC;"),
        _sql("CREATE TABLE employee (id INTEGER PRIMARY KEY, name TEXT, department TEXT, salary REAL);",
             "Write a SQL query that shows the average salary of each department.",
             "SELECT department, AVG(salary) FROM employee GROUP BY department;"),
        _sql("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT);\n"
             "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL, order_date TEXT);",
             "Write a SQL query that gives the total order amount of each customer, by customer name.",
             "SELECT c.name, SUM(o.amount) FROM customer AS c JOIN orders AS o ON o.customer_id = c.id "
             "GROUP BY c.name;"),
        _sql("CREATE TABLE product (id INTEGER PRIMARY KEY, name TEXT, price REAL, stock INTEGER);",
             "Write a SQL query that finds the products that are out of stock.",
             "SELECT name FROM product WHERE stock = 0;"),
        _sql("CREATE TABLE student (id INTEGER PRIMARY KEY, name TEXT, grade INTEGER);",
             "Write a SQL query that counts the students in each grade.",
             "SELECT grade, COUNT(*) FROM student GROUP BY grade;"),
        _sql("CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT, author TEXT, year INTEGER);",
             "Write a SQL query that lists the titles of books published after 2000, newest first.",
             "SELECT title FROM book WHERE year > 2000 ORDER BY year DESC;"),
    ],
    "javascript": [
        Prompt("Write a JavaScript function add(a, b) that returns the sum of two numbers.",
               reference="function add(a, b) {\n  return a + b;\n}\n"),
        Prompt("Write a JavaScript function isEven(n) that returns true when n is even.",
               reference="function isEven(n) {\n  return n % 2 === 0;\n}\n"),
        Prompt("Write JavaScript code that stores three fruit names in an array and logs each one.",
               reference='const fruits = ["apple", "banana", "cherry"];\nfor (const f of fruits) {\n'
                         "  console.log(f);\n}\n"),
        Prompt("Write a JavaScript function that reverses a string.",
               reference='function reverse(s) {\n  return s.split("").reverse().join("");\n}\n'),
        Prompt("Create a JavaScript object describing a car with make, model and year, "
               "and assign it to a const named car.",
               reference='const car = { make: "Toyota", model: "Corolla", year: 2020 };\n'),
        Prompt("Write a JavaScript class Counter with a count field and an increment() method.",
               reference="class Counter {\n  count = 0;\n  increment() {\n    this.count++;\n  }\n}\n"),
    ],
}
