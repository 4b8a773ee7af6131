class Tools:
    def rank_documents(
        self, queries_and_docs: list[tuple[str, int]], weights: dict[str, list[float]]
    ) -> str:
        """
        Rank documents for queries.

        :param queries_and_docs: Pairs of a query and a document id
        :param weights: Per field weights
        """
        return str(len(queries_and_docs))

    def tag_sets(self, tags: set[str], matrix: list[list[int]], pair: tuple[int, str, bool]) -> str:
        """Group tags."""
        return ",".join(sorted(tags))
