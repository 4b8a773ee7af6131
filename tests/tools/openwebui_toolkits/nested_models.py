from typing import Optional

from pydantic import BaseModel, Field


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = Field(description="The city")
    title: Optional[str] = None


class Person(BaseModel):
    name: str
    address: Address
    friends: list[str] = []


class Tools:
    def register(
        self, person: Person, backup: Optional[Address] = None, others: list[Address] = []
    ) -> str:
        """
        Register a person.
        :param person: Who
        """
        return person.name if isinstance(person, Person) else str(person)
