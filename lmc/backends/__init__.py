"""Model backends: one small interface, three real implementations."""

from lmc.backends.base import (
    Backend,
    BackendConfig,
    Generation,
    Piece,
    SamplingSettings,
    StopReason,
)

__all__ = [
    "Backend",
    "BackendConfig",
    "Generation",
    "Piece",
    "SamplingSettings",
    "StopReason",
]
