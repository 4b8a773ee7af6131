import asyncio


class Tools:
    async def slow_echo(self, text: str, delay_ms: int = 10, __event_emitter__=None) -> str:
        await __event_emitter__(
            {"type": "status", "data": {"description": "waiting", "done": False}}
        )
        await asyncio.sleep(delay_ms / 1000)
        await __event_emitter__({"type": "message", "data": {"content": text}})
        await __event_emitter__({"type": "status", "data": {"description": "done", "done": True}})
        return text

    def sync_echo(self, text: str) -> str:
        return text
