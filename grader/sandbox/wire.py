"""Values that cross between the grading process and the student's process.

The student's process (:mod:`grader.sandbox.student`) is not trusted: nothing it
sends is unpickled or evaluated. Values travel as JSON with a small set of
tagged types, and :func:`decode` builds only those: numbers, strings, lists,
tuples, dicts, numpy arrays, dtypes, meshes, partition specs, jax arrays
(their sharding and every device's shard), exceptions (by class name) and,
for anything else, an :class:`Opaque` stand-in that keeps the type's name
for error messages. Lists keep their identity (a list held twice comes back
as one object held twice), so a check can still see aliased rows.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import json
import sys
from typing import Any

import numpy as np

MAX_DEPTH = 64
MAX_ITEMS = 1_000_000
"""Most nodes one message may hold; a larger one is refused."""


class WireError(Exception):
    """A message from the student's process that is not a value the grader takes."""


class Opaque:
    """Stands in for a value of a type the wire does not carry; ``type(x).__name__``
    is the original type's name, ``repr`` its repr (shortened)."""

    def __init__(self, text: str):
        self._text = text

    def __repr__(self) -> str:
        return self._text


class RemoteError(Exception):
    """An exception raised by the student's code in its own process, rebuilt here.

    Built-in exception classes come back as themselves (``ValueError`` …); the
    rest as a subclass of this one with the original class name. ``student_text``
    is the traceback of the student's frames, formatted over there."""

    student_text: str | None = None


# ------------------------------------------------------------------ encode


def dumps(value: Any) -> str:
    return json.dumps(encode(value), separators=(",", ":"))


def loads(text: str | bytes, mesh_for: Any = None) -> Any:
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"not JSON: {exc}") from None
    return decode(raw, mesh_for)


def encode(value: Any) -> Any:
    return _Encoder().go(value, 0)


class _Encoder:
    def __init__(self) -> None:
        self.lists: dict[int, int] = {}
        self.keep: list[Any] = []  # ids stay unique while encoding

    def go(self, v: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            return _opaque(v)
        if v is None or isinstance(v, bool | str):
            return v
        if isinstance(v, int):
            return {"t": "int", "v": str(v)} if abs(v) >= 2**53 else v
        if isinstance(v, float):
            return v if np.isfinite(v) else {"t": "float", "v": repr(v)}
        if isinstance(v, np.generic) and not isinstance(v, np.void):
            return {"t": "scalar", "dtype": v.dtype.name, "v": _b64(np.asarray(v).tobytes())}
        if isinstance(v, list):
            if id(v) in self.lists:
                return {"t": "ref", "v": self.lists[id(v)]}
            self.lists[id(v)] = len(self.lists)
            self.keep.append(v)
            return {"t": "list", "id": self.lists[id(v)], "v": [self.go(x, depth + 1) for x in v]}
        if isinstance(v, tuple):  # a named tuple travels as a plain one (they compare equal)
            return {"t": "tuple", "v": [self.go(x, depth + 1) for x in v]}
        if isinstance(v, slice):
            return {"t": "slice", "v": [self.go(x, depth + 1) for x in (v.start, v.stop, v.step)]}
        if isinstance(v, dict):
            return {"t": "dict", "v": [[self.go(k, depth + 1), self.go(x, depth + 1)] for k, x in v.items()]}  # fmt: skip
        if isinstance(v, np.ndarray) and v.dtype.kind in "biufc" or _is_bf16(v):
            return _array(v)
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            return {"t": "dtype", "v": np.dtype(v).name, "type": isinstance(v, type)}
        if isinstance(v, BaseException):
            return {"t": "exc", "type": type(v).__name__, "v": str(v)[:4000]}
        if dataclasses.is_dataclass(v) and not isinstance(v, type) and _ours(type(v)):
            fields = [
                [f.name, self.go(getattr(v, f.name), depth + 1)] for f in dataclasses.fields(v)
            ]
            return {"t": "dc", "cls": f"{type(v).__module__}:{type(v).__qualname__}", "v": fields}
        jax_value = _encode_jax(self, v, depth)
        return jax_value if jax_value is not None else _opaque(v)


OURS = ("grader.", "tinymodels.")
"""Modules whose dataclasses travel as themselves (a spec's Chip record, say)."""


def _ours(cls: type) -> bool:
    return cls.__module__.startswith(OURS)


def _opaque(v: Any) -> dict:
    try:
        text = repr(v)[:200]
    except Exception:
        text = f"<{type(v).__name__}>"
    return {"t": "opaque", "type": type(v).__name__[:100], "v": text}


def _is_bf16(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.name == "bfloat16"


def _array(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    return {"t": "nd", "dtype": a.dtype.name, "shape": list(a.shape), "v": _b64(a.tobytes())}


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _encode_jax(enc: _Encoder, v: Any, depth: int) -> Any:
    if "jax" not in sys.modules:
        return None
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    if isinstance(v, PartitionSpec):
        return {"t": "pspec", "v": [enc.go(p, depth + 1) for p in v]}
    if isinstance(v, Mesh):
        return _mesh(v)
    if isinstance(v, jax.Array) and not isinstance(v, jax.core.Tracer):
        if v.is_deleted():
            return _opaque(v)
        sharding = v.sharding
        if isinstance(sharding, NamedSharding):
            how = {"mesh": _mesh(sharding.mesh), "spec": enc.go(sharding.spec, depth + 1)}
        elif len(sharding.device_set) == 1:
            how = {"device": next(iter(sharding.device_set)).id}
        else:
            return _opaque(v)
        shards = [[s.device.id, _array(np.asarray(s.data))] for s in v.addressable_shards]
        return {"t": "jarray", "shape": list(v.shape), "dtype": v.dtype.name, "how": how, "shards": shards}  # fmt: skip
    return None


def _mesh(m: Any) -> dict:
    return {
        "t": "mesh",
        "shape": [int(s) for s in m.devices.shape],
        "axes": [str(a) for a in m.axis_names],
        "types": [str(t).rsplit(".", 1)[-1] for t in getattr(m, "axis_types", ())],
        "ids": [int(d.id) for d in m.devices.flat],
    }


# ------------------------------------------------------------------ decode


def decode(raw: Any, mesh_for: Any = None) -> Any:
    """Build a value from :func:`encode`'s form; ``mesh_for(encoded mesh)`` may
    return a mesh of this process to use for it (the one an argument was)."""
    return _Decoder(mesh_for).go(raw, 0)


class _Decoder:
    def __init__(self, mesh_for: Any) -> None:
        self.lists: dict[int, list] = {}
        self.nodes = 0
        self.mesh_for = mesh_for

    def go(self, r: Any, depth: int) -> Any:
        self.nodes += 1
        if depth > MAX_DEPTH + 2 or self.nodes > MAX_ITEMS:
            raise WireError("too deep or too large")
        if r is None or isinstance(r, bool | str | float):
            return r
        if isinstance(r, int):
            return r
        if not isinstance(r, dict) or not isinstance(r.get("t"), str):
            raise WireError(f"unexpected {type(r).__name__}")
        t, v = r["t"], r.get("v")
        if t == "int":
            return int(_str(v))
        if t == "float":
            return float(_str(v))
        if t == "list":
            out: list = []
            self.lists[int(r["id"])] = out
            out.extend(self.go(x, depth + 1) for x in _list(v))
            return out
        if t == "ref":
            if int(v) not in self.lists:
                raise WireError("reference to an unknown list")
            return self.lists[int(v)]
        if t == "tuple":
            return tuple(self.go(x, depth + 1) for x in _list(v))
        if t == "dict":
            pairs = [(self.go(k, depth + 1), self.go(x, depth + 1)) for k, x in (_pair(p) for p in _list(v))]  # fmt: skip
            try:
                return dict(pairs)
            except TypeError:
                raise WireError("a dict key that cannot be a key") from None
        if t == "nd":
            return _nd(r)
        if t == "scalar":
            return _nd({"dtype": r["dtype"], "shape": [], "v": v})[()]
        if t == "dtype":
            dt = _dtype(v)
            return dt.type if r.get("type") else dt
        if t == "exc":
            return remote_exception(_str(r.get("type")), _str(v))
        if t == "opaque":
            return opaque(_str(r.get("type")), _str(v))
        if t == "slice":
            # numpy integers (np.nonzero's, np.arange's) are whole numbers too: as Python ints
            start, stop, step = (_whole(self.go(x, depth + 1)) for x in _list(v))
            if not all(x is None or isinstance(x, int) for x in (start, stop, step)):
                raise WireError("a slice of something other than whole numbers")
            return slice(start, stop, step)
        if t == "dc":
            return self.dataclass(r, depth)
        if t == "pspec":
            from jax.sharding import PartitionSpec

            return PartitionSpec(*(self.go(x, depth + 1) for x in _list(v)))
        if t == "mesh":
            return self.mesh(r)
        if t == "jarray":
            return self.jarray(r, depth)
        raise WireError(f"unknown tag {t!r}")

    def dataclass(self, r: dict, depth: int) -> Any:
        """One of the grader's own records, rebuilt through its constructor; a
        class from anywhere else (or not loaded) comes back opaque."""
        module, _, name = _str(r.get("cls")).partition(":")
        cls = getattr(sys.modules.get(module), name, None) if module.startswith(OURS) else None
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            return opaque(name.rsplit(".", 1)[-1] or "object", f"<{name}>")
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        fields = {_str(k): self.go(x, depth + 1) for k, x in (_pair(p) for p in _list(r["v"]))}
        if set(fields) != names:
            raise WireError(f"a {name} with other fields than its own")
        try:
            return cls(**fields)
        except Exception as exc:
            raise WireError(f"a {name} that cannot be built: {exc}") from None

    def mesh(self, r: dict) -> Any:
        if self.mesh_for is not None and (m := self.mesh_for(r)) is not None:
            return m
        import jax
        from jax.sharding import AxisType, Mesh

        by_id = {d.id: d for d in _all_devices()}
        ids = [int(i) for i in _list(r["ids"])]
        if any(i not in by_id for i in ids):
            raise WireError("a mesh over devices this process does not have")
        shape = tuple(int(s) for s in _list(r["shape"]))
        if int(np.prod(shape)) != len(ids):
            raise WireError("a mesh whose shape does not match its devices")
        devs = np.array([by_id[i] for i in ids], dtype=object).reshape(shape)
        types = tuple(getattr(AxisType, str(t)) for t in _list(r.get("types", [])))
        axes = tuple(_str(a) for a in _list(r["axes"]))
        del jax
        return Mesh(devs, axes, axis_types=types) if types else Mesh(devs, axes)

    def jarray(self, r: dict, depth: int) -> Any:
        import jax
        from jax.sharding import NamedSharding, make_single_device_sharding

        shape = tuple(int(s) for s in _list(r["shape"]))
        dtype = _dtype(r["dtype"])
        how = r["how"]
        if not isinstance(how, dict):
            raise WireError("bad array placement")
        if "mesh" in how:
            sharding = NamedSharding(self.mesh(how["mesh"]), self.go(how["spec"], depth + 1))
        else:
            by_id = {d.id: d for d in _all_devices()}
            if int(how.get("device", -1)) not in by_id:
                raise WireError("an array on a device this process does not have")
            sharding = make_single_device_sharding(by_id[int(how["device"])])
        shards = {int(_pair(s)[0]): _nd(_pair(s)[1]) for s in _list(r["shards"])}
        try:
            devices = list(sharding.addressable_devices_indices_map(shape).items())
            if set(shards) != {d.id for d, _ in devices}:
                raise WireError("an array whose shards do not match its sharding")
            arrays = [jax.device_put(shards[d.id].astype(dtype), d) for d, _ in devices]
            return jax.make_array_from_single_device_arrays(shape, sharding, arrays)
        except WireError:
            raise
        except Exception as exc:
            raise WireError(f"an array that cannot be rebuilt: {exc}") from None


def _all_devices() -> list[Any]:
    import jax

    out = list(jax.devices())
    if out[0].platform != "cpu":
        out += list(jax.devices("cpu"))
    return out


def _nd(r: Any) -> np.ndarray:
    if not isinstance(r, dict):
        raise WireError("bad array")
    dtype = _dtype(r["dtype"])
    shape = tuple(int(s) for s in _list(r["shape"]))
    data = base64.b64decode(_str(r["v"]))
    if len(data) != int(np.prod(shape)) * dtype.itemsize:
        raise WireError("an array whose data does not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _dtype(name: Any) -> np.dtype:
    name = _str(name)
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    try:
        dt = np.dtype(name)
    except TypeError:
        raise WireError(f"unknown dtype {name!r}") from None
    if dt.kind not in "biufc":
        raise WireError(f"dtype {name!r} not carried")
    return dt


def _whole(x: Any) -> Any:
    """A numpy integer scalar as the Python int it is (not a bool); anything else as is."""
    return int(x) if isinstance(x, np.integer) else x


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise WireError("expected a string")
    return v


def _list(v: Any) -> list:
    if not isinstance(v, list):
        raise WireError("expected a list")
    return v


def _pair(v: Any) -> tuple[Any, Any]:
    if not isinstance(v, list) or len(v) != 2:
        raise WireError("expected a pair")
    return v[0], v[1]


_OPAQUE: dict[str, type] = {}
_ERRORS: dict[str, type] = {}


def opaque(type_name: str, text: str) -> Opaque:
    cls = _OPAQUE.get(type_name)
    if cls is None:
        cls = _OPAQUE[type_name] = type(_name(type_name), (Opaque,), {})
    return cls(text)


def remote_exception(type_name: str, message: str) -> BaseException:
    """The student's exception, rebuilt: a built-in class as itself, any other
    class as a :class:`RemoteError` subclass of the same name."""
    builtin = getattr(builtins, type_name, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception) and builtin is not RemoteError:
        try:
            return builtin(message)
        except Exception:
            pass
    cls = _ERRORS.get(type_name)
    if cls is None:
        cls = _ERRORS[type_name] = type(_name(type_name), (RemoteError,), {})
    return cls(message)


def raise_from(answer: dict) -> None:
    """Re-raise here what the student's code raised over there (an answer's
    ``raised``, as :meth:`grader.sandbox.student.Session.raised` wrote it): the
    worker's side of it, for a lone student's process
    (:mod:`grader.sandbox.isolation`) and for each process of a cluster
    (:mod:`grader.sandbox.cluster`)."""
    from grader.faults import (
        HostCall,
        SpecFaultThere,
        StudentFault,
        StudentProcessDied,
        StudentReturnError,
    )

    r = answer.get("raised")
    if not isinstance(r, dict):
        raise StudentProcessDied("it answered with something that is not an answer")
    kind, message = str(r.get("kind")), str(r.get("message", ""))
    if kind == "not_started":
        raise NotImplementedError(message)
    if kind == "not_exportable":
        raise HostCall(message)
    if kind == "return":
        hint = r.get("hint")
        raise StudentReturnError(message, hint=hint if isinstance(hint, str) else None)
    if kind == "grader":
        raise SpecFaultThere(message)
    if kind == "fault" or (kind != "exit" and not r.get("called")):
        raise StudentFault(message)
    exc = remote_exception(str(r.get("type", "Exception")), message)
    exc.student_text = str(r.get("text", message))  # type: ignore[attr-defined]
    raise exc


def _name(text: str) -> str:
    clean = "".join(c for c in text if c.isalnum() or c == "_")[:100]
    return clean if clean and not clean[0].isdigit() else f"_{clean}"
