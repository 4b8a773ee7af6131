class Tools:
    def configure(
        self,
        name: str = "default",
        count: int = 3,
        ratio: float = 0.5,
        verbose: bool = True,
        labels: list[str] = ["a", "b"],
        options: dict[str, int] = {"x": 1},
    ) -> str:
        """
        Configure something.

        With a second paragraph.
        :param count: How many
        """
        return name
