from typing import Optional, Union


class Tools:
    def search(
        self,
        query: str,
        site: Optional[str] = None,
        limit: Optional[int] = 5,
        lang: str | None = None,
        domains: Optional[list[str]] = None,
        region: Union[str, None] = "eu",
    ) -> str:
        """
        Search the web.
        :param query: What to look for
        :param site: Restrict to one site
        :param limit: How many results
        """
        return query
