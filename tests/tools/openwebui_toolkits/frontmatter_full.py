"""
Title: Calculator
AUTHOR: someone
Version: 1.2.0
requirements:pydantic, PyYAML
Description: Arithmetic
"""


class Tools:
    def __init__(self):
        self.citation = True

    def calculate(self, equation: str) -> str:
        """
        :param equation: The equation to evaluate, e.g. 1+2
        :return: The result
        """
        allowed = set("0123456789+-*/(). ")
        if not set(equation) <= allowed:
            return "invalid equation"
        return str(eval(equation))  # noqa: S307 - the characters are checked above
