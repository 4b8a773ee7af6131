from pydantic import BaseModel


class Tools:
    class Valves(BaseModel):
        prefix: str = ">"

    class UserValves(BaseModel):
        shout: bool = False

    def __init__(self):
        self.valves = self.Valves()
        self.counter = 0

    def _helper(self, x: str) -> str:
        return x.upper()

    def __private(self) -> None:
        pass

    def greet(self, name: str) -> str:
        """Greet someone.
        :param name: Who"""
        return self.valves.prefix + self._helper(name)

    @staticmethod
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @classmethod
    def version(cls) -> str:
        """The version."""
        return "1"
