from typing import Any, Union


class Tools:
    def convert(
        self, value: int | str, target: Union[int, float, None] = None, extra: Any = None
    ) -> str:
        """
        Convert a value.
        :param value: A number or a text
        :param extra: Anything at all
        """
        return str(value)

    def plain_containers(self, data: dict, items: list, pair: tuple) -> str:
        """Take untyped containers."""
        return str(data)
