from typing import Annotated

from pydantic import Field


class Tools:
    def lookup(
        self,
        key: str = Field(..., description="The key to look up"),
        depth: Annotated[int, Field(description="How deep", ge=1, le=5)] = 2,
        mode: str = Field("fast", description="From the Field"),
        note: str = Field("", max_length=20),
    ) -> str:
        """
        Look something up.
        :param mode: From the docstring (the Field wins)
        :param note: From the docstring (the Field has none)
        """
        return key
