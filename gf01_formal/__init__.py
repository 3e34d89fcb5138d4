"""GF-01 benchmark layer, one subpackage per concern, data flowing one way (docs/, DESIGN.md section 2):
``instances`` (the model, files, sources, the certified generator, splits, measurement), ``scoring`` (certificate
format and exact scores), ``play`` (the episode engine, protocol messages, the Gymnasium environment), ``agents``
(the baseline panel, external programs, the LLM adapter), ``runs`` (records, one run, the runs file, validation, the
protocol check of an external agent), ``report`` (reports, pilots, caps, releases), ``campaign`` (the one
orchestrator: evaluate and campaigns), ``web`` (the R1 browser game), ``integrations`` (inspect_ai) and ``cli``
(the ``gf01`` command line); loose at the root only ``artifacts`` (atomic JSON files and hashes), ``schemas`` (the
JSON Schema export) and ``workers`` (process pools and program groups that die with the harness).

Importing the package registers the Gymnasium environment ``gf01/GF01-v0`` (``gymnasium.make("gf01/GF01-v0",
bundle=...)``), as packages of environments do, without importing Gymnasium: when Gymnasium is already imported the
id is registered at once, otherwise when Gymnasium is first imported (a finder on ``sys.meta_path`` that steps aside
after that one import). Nothing is imported when Gymnasium is not installed or never used; the entry point is a
string, so the environment's module loads only when an environment is made.
"""

import sys

from hoa.errors import Gf01Error

__all__ = ["Gf01Error"]

#: The Gymnasium id of the GF-01 environment (gf01_formal.play.gym_env).
GYM_ID = "gf01/GF01-v0"


def _register_gym(gymnasium: object) -> None:
    registry = getattr(gymnasium, "registry", None)
    register = getattr(gymnasium, "register", None)
    if registry is not None and register is not None and GYM_ID not in registry:
        register(id=GYM_ID, entry_point="gf01_formal.play.gym_env:GF01Env")


class _GymnasiumHook:
    """A meta-path finder that registers :data:`GYM_ID` right after Gymnasium's own import, then steps aside."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = None
        for finder in list(sys.meta_path):  # the finders that would have found it (site-packages, editable, ...)
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Registering(spec.loader)
        return spec


class _Registering:
    """Gymnasium's own loader, and then the registration."""

    def __init__(self, loader: object) -> None:
        self.loader = loader

    def create_module(self, spec: object) -> object:
        return self.loader.create_module(spec)  # type: ignore[attr-defined]

    def exec_module(self, module: object) -> None:
        self.loader.exec_module(module)  # type: ignore[attr-defined]
        _register_gym(module)

    def __getattr__(self, name: str) -> object:  # get_resource_reader, is_package, ...: the real loader's
        return getattr(self.loader, name)


if "gymnasium" in sys.modules:
    _register_gym(sys.modules["gymnasium"])
elif not any(isinstance(f, _GymnasiumHook) for f in sys.meta_path):
    sys.meta_path.insert(0, _GymnasiumHook())
