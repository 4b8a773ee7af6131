from typing import Any, Awaitable, Callable, Optional


class Tools:
    async def inspect_call(
        self,
        query: str,
        __user__: dict = {},
        __event_emitter__: Optional[Callable[[dict], Awaitable[None]]] = None,
        __event_call__: Optional[Callable[[dict], Awaitable[Any]]] = None,
        __metadata__: Optional[dict] = None,
        __messages__: Optional[list] = None,
        __files__: Optional[list] = None,
        __model__: Optional[dict] = None,
        __id__: Optional[str] = None,
        __chat_id__: Optional[str] = None,
        __message_id__: Optional[str] = None,
        __request__=None,
        __oauth_token__: Optional[dict] = None,
    ) -> dict:
        """
        Report what the engine passed.
        :param query: Anything
        :param __user__: The user (never shown to the model)
        """
        await __event_emitter__({"type": "status", "data": {"description": "seen", "done": False}})
        answer = (
            await __event_call__({"type": "input", "data": {"title": "ok?"}})
            if __event_call__
            else None
        )
        await __event_emitter__({"type": "status", "data": {"description": "done", "done": True}})
        return {
            "query": query,
            "user": {k: v for k, v in __user__.items() if k != "valves"},
            "metadata": __metadata__,
            "messages": __messages__,
            "files": __files__,
            "model": __model__,
            "id": __id__,
            "chat_id": __chat_id__,
            "message_id": __message_id__,
            "request": __request__,
            "oauth_token": __oauth_token__,
            "answer": answer,
        }

    def only_user(self, __user__: dict) -> str:
        """Who calls."""
        return str(__user__["id"])
