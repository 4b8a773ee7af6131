import enum
from typing import Literal

from pydantic import Field


class Unit(str, enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Tools:
    def weather(
        self,
        city: str,
        unit: Unit = Unit.CELSIUS,
        detail: Literal["short", "long"] = "short",
        level: Level = Field(Level.LOW, description="how loud"),
    ) -> str:
        """
        Get the weather.
        :param city: The city
        :param unit: Temperature unit
        """
        return city

    def pick(self, mode: Literal["a", "b", "c"], flag: Literal[True]) -> str:
        """Pick a mode."""
        return mode
