"""
title: Web Search
description: Search the web with a SearXNG-style JSON endpoint
requirements: aiohttp
"""

import logging

import aiohttp
from pydantic import BaseModel, Field

logging.basicConfig(level=logging.DEBUG, force=True)
log = logging.getLogger("web_search")


class Tools:
    class Valves(BaseModel):
        search_url: str = Field(description="The search endpoint, e.g. http://host/search")
        max_results: int = Field(3, ge=1, le=10, description="How many results")
        timeout_s: float = Field(5.0, gt=0)

    def __init__(self):
        self.citation = False

    async def search_web(self, query: str, __event_emitter__=None) -> str:
        """
        Search the web and return the top results.
        :param query: The search query
        """
        await __event_emitter__(
            {"type": "status", "data": {"description": f"Searching for {query}", "done": False}}
        )
        timeout = aiohttp.ClientTimeout(total=self.valves.timeout_s)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.get(
                self.valves.search_url, params={"q": query, "format": "json"}
            ) as response:
                response.raise_for_status()
                found = await response.json()
        results = found["results"][: self.valves.max_results]
        for item in results:
            await __event_emitter__(
                {
                    "type": "citation",
                    "data": {
                        "document": [item["content"]],
                        "metadata": [{"source": item["url"]}],
                        "source": {"name": item["title"], "url": item["url"]},
                    },
                }
            )
        await __event_emitter__(
            {
                "type": "status",
                "data": {"description": f"Found {len(results)} results", "done": True},
            }
        )
        return "\n".join(f"{item['title']}: {item['url']}" for item in results)
