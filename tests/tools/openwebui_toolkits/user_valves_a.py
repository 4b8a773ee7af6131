import asyncio

from pydantic import BaseModel, Field


class Tools:
    class UserValves(BaseModel):
        token: str = Field("", description="The user's own token")
        greeting: str = "hello"

    async def whoami_a(self, pause_ms: int = 20, __user__: dict = {}) -> str:
        """Say who calls, with the user's own valves."""
        valves = __user__["valves"]
        seen = valves.token
        valves.token = "tampered"
        await asyncio.sleep(pause_ms / 1000)
        return f"a:{__user__['id']}:{seen}:{valves.greeting}"

    def whoami_sync_a(self, __user__: dict = {}) -> str:
        """The same, from a sync method."""
        return f"a:{__user__['id']}:{__user__['valves'].token}"
