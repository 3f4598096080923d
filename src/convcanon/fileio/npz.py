"""npz inputs, checked before anything is inflated: member names, the sizes in the zip directory,
each `.npy` header."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio.limits import input_limit
from convcanon.fileio.reading import READ_CHUNK, read_input_bytes
from convcanon.records import NamedTuple

if TYPE_CHECKING:
    import zipfile

    import numpy as np


# A pattern string, compiled on first use (re's cache): most runs never need it.
_NPZ_MEMBER = r"[A-Za-z_][\w.]*\.npy"


def _zip_errors() -> tuple[type[BaseException], ...]:
    """What zipfile raises on a damaged archive (RuntimeError: an encrypted member; zlib.error,
    lzma.LZMAError, OSError from bz2: a damaged compressed stream). zipfile and zlib are
    imported here, on the npz path only: convcanon-opt never reads one."""
    import zipfile
    import zlib

    lzma = getattr(zipfile, "lzma", None)  # None when Python was built without lzma
    return (
        zipfile.BadZipFile,
        ValueError,
        OSError,
        EOFError,
        NotImplementedError,
        RuntimeError,
        zlib.error,
        *([lzma.LZMAError] if lzma else []),
    )


def _npz_error(path: str, message: str) -> ConvcanonError:
    return ConvcanonError(f"cannot read inputs as .npz: {message}", SourceLoc(path))


def _npy_header(raw: bytes, member: str, path: str) -> NpyHeader:
    """The header of one member from its first bytes, refusing anything odd."""
    import numpy as np

    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy version {version[0]}.{version[1]}")
    except Exception as err:  # numpy reports a bad header as ValueError, SyntaxError, TokenError...
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _npz_error(path, f"member {member!r} has a bad .npy header ({detail})") from None
    if dtype.hasobject:
        raise _npz_error(
            path,
            f"member {member!r} holds Python objects; pickles are refused (allow_pickle=False)",
        )
    if dtype.itemsize == 0 or any(int(d) < 0 for d in shape):
        what = "a zero-size element type" if dtype.itemsize == 0 else f"a negative shape {shape}"
        raise _npz_error(path, f"member {member!r} has a bad .npy header ({what})")
    return NpyHeader(tuple(int(d) for d in shape), dtype, bool(fortran), stream.tell())


# magic, version and length (at most 12 bytes), then numpy's own bound on the header text
_NPY_HEADER_PREFIX = 12 + 10_000


class NpyHeader(NamedTuple):
    """What one npz member's `.npy` header declares: enough to check it against a parameter."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    offset: int  # where the data starts in the member


class NpzArrays(Mapping[str, "np.ndarray"]):
    """An npz archive's arrays by name (without `.npy`), each inflated on first access.

    Opening reads the zip directory and each member's `.npy` header only, so a caller can check
    names, shapes and dtypes against what it expects before a single array is inflated.
    """

    def __init__(
        self,
        path: str,
        archive: zipfile.ZipFile,
        members: dict[str, zipfile.ZipInfo],
        headers: dict[str, NpyHeader],
    ) -> None:
        self.path = path
        self._archive = archive
        self._members = members
        self._headers = headers
        self._arrays: dict[str, np.ndarray] = {}

    def header(self, key: str) -> NpyHeader:
        return self._headers[key]

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._arrays:
            info = self._members[key]
            self._arrays[key] = _read_member(self._archive, info, self._headers[key], self.path)
        return self._arrays[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


def input_header(inputs: Mapping[str, np.ndarray], key: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of one input without inflating it when it is an npz member not yet read."""
    if isinstance(inputs, NpzArrays):
        header = inputs.header(key)
        return header.shape, header.dtype
    value = inputs[key]
    return tuple(value.shape), value.dtype


def holds_raw_bits(dtype: np.dtype, expected: np.dtype) -> bool:
    """Whether an input of `dtype` is `expected`'s values as raw bytes: plain void of the same
    width, as numpy saves a dtype it cannot name (bf16, fp8). A structured dtype is not."""
    return dtype.kind == "V" and dtype.names is None and dtype.itemsize == expected.itemsize


def open_npz(path: str, limit: int | None = None) -> NpzArrays:
    """An npz file's arrays by name, checked before anything is inflated; see `NpzArrays`.

    The archive is read bounded; its members' names and the uncompressed sizes in the zip
    directory must be sane and add up to at most the limit; each `.npy` header must describe
    exactly the bytes its member holds. Python's zipfile never inflates past a member's size.
    """
    limit = input_limit(limit)
    name, data = read_input_bytes(path, limit)
    if data[:2] != b"PK":
        what = "a single .npy array" if data.startswith(b"\x93NUM") else "no zip header"
        raise ConvcanonError(f"not an .npz archive ({what})", SourceLoc(name))
    import zipfile

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except _zip_errors() as err:
        raise _npz_error(name, str(err)) from None
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in archive.infolist():
        key = info.filename[: -len(".npy")]
        if not re.fullmatch(_NPZ_MEMBER, info.filename) or key in members:
            what = "a repeated" if key in members else "an odd"
            raise _npz_error(name, f"{what} member name {info.filename!r} (expected NAME.npy)")
        members[key] = info
        total += info.file_size
        if total > limit:
            raise _npz_error(
                name,
                f"its members inflate to over {limit} bytes (the input size limit, "
                "--max-input-size); refused before inflating",
            )
    headers = {key: _member_header(archive, info, name) for key, info in members.items()}
    return NpzArrays(name, archive, members, headers)


def _member_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str) -> NpyHeader:
    """Inflate only the start of a member, read its header, and check that the data it declares
    is exactly the size the zip directory gives."""
    try:
        with archive.open(info) as member:
            raw = member.read(min(info.file_size, _NPY_HEADER_PREFIX))
    except _zip_errors() as err:
        raise _npz_error(path, f"member {info.filename!r}: {err}") from None
    header = _npy_header(raw, info.filename, path)
    count = math.prod(header.shape)
    declared = count * header.dtype.itemsize
    if declared != info.file_size - header.offset:
        raise _npz_error(
            path,
            f"member {info.filename!r}: its .npy header describes {declared} "
            f"bytes of data but it holds {info.file_size - header.offset}",
        )
    return header


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, header: NpyHeader, path: str
) -> np.ndarray:
    """Inflate one member into a single buffer the array then views (no second copy)."""
    import numpy as np

    buffer = bytearray(info.file_size)
    view = memoryview(buffer)
    filled = 0
    try:
        with archive.open(info) as member:
            while filled < info.file_size:
                chunk = member.read(min(READ_CHUNK, info.file_size - filled))
                if not chunk:
                    break
                view[filled : filled + len(chunk)] = chunk
                filled += len(chunk)
            extra = member.read(1)
    except _zip_errors() as err:
        raise _npz_error(path, f"member {info.filename!r}: {err}") from None
    if filled != info.file_size or extra:
        raise _npz_error(path, f"member {info.filename!r} does not match its zip directory size")
    count = math.prod(header.shape)
    flat = np.frombuffer(buffer, dtype=header.dtype, count=count, offset=header.offset)
    return flat.reshape(header.shape, order="F" if header.fortran else "C")
