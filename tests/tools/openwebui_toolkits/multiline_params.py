class Tools:
    def summarize(self, text: str, max_words: int = 100, style: str = "plain") -> str:
        """
        Summarize a text
        in a few words.

        :param text: The text to summarize; it may be long,
            and this line continues its description
            over two lines.
        :param max_words:
            The most words the summary may have.
        :param style: The style.
        :return: The summary
            (not part of any parameter).
        """
        return text[:max_words]
