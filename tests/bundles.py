"""The generator configs of the small bundles the test suites play (tests/conftest.py makes them, once a session)."""

from __future__ import annotations

from typing import Any

SMALL: dict[str, Any] = {"families": [{"kind": "random_mealy", "states": [4, 6], "inputs": [2, 3]}],
                         "horizon": [6, 10]}
CHAT: dict[str, Any] = {"families": [{"kind": "random_mealy", "states": [4, 6], "inputs": [2, 3]}],
                        "horizon": [6, 9]}
TINY: dict[str, Any] = {"families": [{"kind": "random_mealy", "states": [3, 4], "inputs": [2, 2]}],
                        "horizon": [5, 6]}
REPORTED: dict[str, Any] = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [2, 3],
                                          "outputs": [1, 2]}], "horizon": [6, 10]}
CAMPAIGN: dict[str, Any] = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [3, 3],
                                          "outputs": [2, 2]}], "horizon": [6, 12]}
