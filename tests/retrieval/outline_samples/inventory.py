"""Stock levels per warehouse, with reservations that expire."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import datetime, timedelta

RESERVATION_TTL = timedelta(minutes=15)


class OutOfStock(Exception):
    """Raised when a reservation asks for more than is on hand."""


@dataclasses.dataclass
class Reservation:
    sku: str
    quantity: int
    expires: datetime

    @property
    def expired(self) -> bool:
        return datetime.now() >= self.expires


class Warehouse:
    """One building's stock; not thread-safe, callers hold the lock."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stock: dict[str, int] = defaultdict(int)
        self._reservations: list[Reservation] = []

    def receive(self, sku: str, quantity: int) -> None:
        self._stock[sku] += quantity

    def available(self, sku: str) -> int:
        held = sum(r.quantity for r in self._reservations if r.sku == sku and not r.expired)
        return self._stock[sku] - held

    def reserve(
        self,
        sku: str,
        quantity: int,
        *,
        ttl: timedelta = RESERVATION_TTL,
    ) -> Reservation:
        """Hold stock for a checkout; raises OutOfStock."""
        if self.available(sku) < quantity:
            raise OutOfStock(sku)
        reservation = Reservation(sku, quantity, datetime.now() + ttl)
        self._reservations.append(reservation)
        return reservation

    class Audit:
        def __init__(self, warehouse: Warehouse) -> None:
            self.warehouse = warehouse

        def report(self) -> dict[str, int]:
            return dict(self.warehouse._stock)


def total_available(warehouses: list[Warehouse], sku: str) -> int:
    def one(w: Warehouse) -> int:
        return w.available(sku)

    return sum(one(w) for w in warehouses)


async def refresh_forever(warehouse: Warehouse) -> None:
    import asyncio

    while True:
        await asyncio.sleep(60)
