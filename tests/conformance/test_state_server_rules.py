"""Each check rwkv_lightning_cuda applies to a State, with a file it takes and one it refuses; the registry's
verdict (``add``, then ``validate``) is the server's, or the difference is deliberate and said so here.

The server (Alic-Li/rwkv_lightning_cuda) checks a State twice:

- on upload, ``UploadedStateStore::upload`` and ``validate_state_pth`` (``src/server/rwkv_uploaded_state_store.cpp``,
  the version that fills ``UploadedStateInfo``'s layers/heads/head_size; the 47e3744 one only counted tensors);
  the limit ``kMaxUploadedStateBytes = 512 MiB`` is in ``include/rwkv/server/rwkv_uploaded_state_store.hpp``;
  the archive and pickle are read by ``llm_infer::PthArchive::open`` and ``parse_pth_tensor_records``, the values
  scanned by ``compute_tensor_stats`` (``src/io/pth_tensor.cpp``, commit 68daa7f958: NaN is skipped, not refused);
- when a request uses it, ``ModelBackend::load_state_from_pth`` (``src/backend/rwkv7_fast_v4.cu``, commit
  279c3989ca), against the running base's dimensions.

docs/state-files.md has the same list with the registry's code for each check.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from bf16_trainer_writer import write_bf16_state
from lightning_prims import (
    Zeros,
    pickle_dict,
    pickle_global,
    pickle_int,
    pickle_string,
    pickle_tuple,
    tensor_record,
    write_zip,
    write_zip_file,
)
from peft_writer import peft_state_dict, write_peft_state
from state_registry import BASE, Verdict, add_and_validate, fresh_registry, republish, run, runtime_values, train_file

torch = pytest.importorskip("torch")

H, N, LANE = 2, 64, 2 * 64 * 64  # the tiny base: 2 layers of [2, 64, 64]
LIMIT = 512 * 1024 * 1024


def _record(
    name: str,
    key: str,
    shape: tuple[int, ...],
    *,
    storage: str = "BFloat16Storage",
    offset: int = 0,
    numel: int | None = None,
    stride: tuple[int, ...] | None = None,
) -> bytes:
    """A ``_rebuild_tensor_v2`` record like the trainers' (:func:`lightning_prims.tensor_record`) with the storage
    size, storage offset or stride chosen by the test."""
    count = 1
    for d in shape:
        count *= d
    if stride is None:
        stride = tuple(int(torch.tensor(0).new_empty(shape).stride()[i]) for i in range(len(shape)))
    return b"".join(
        [
            pickle_string(name),
            pickle_global("torch._utils", "_rebuild_tensor_v2"),
            b"((",
            pickle_string("storage"),
            pickle_global("torch", storage),
            pickle_string(key),
            pickle_string("cpu"),
            pickle_int(count if numel is None else numel),
            b"tQ",
            pickle_int(offset),
            pickle_tuple(shape),
            pickle_tuple(stride),
            b"\x89}tR",
        ]
    )


def _crafted(path: Path, records: list[bytes], storages: Sequence[bytes | Zeros]) -> Path:
    """A file in ``write_pth``'s entry order (data/0..n-1, data.pkl, byteorder, version)."""
    entries: list[tuple[str, bytes | Zeros]] = [(f"archive/data/{i}", s) for i, s in enumerate(storages)]
    entries += [
        ("archive/data.pkl", pickle_dict(records)),
        ("archive/byteorder", b"little"),
        ("archive/version", b"3\n"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_zip_file(path, entries)
    return path


def _layers(n: int = 2) -> tuple[list[bytes], list[bytes]]:
    values = torch.randn(n, H, N, N).mul(0.1).to(torch.bfloat16)
    records = [tensor_record(f"blocks.{i}.att.time_state", "BFloat16Storage", str(i), (H, N, N)) for i in range(n)]
    return records, [values[i].view(torch.uint8).numpy().tobytes() for i in range(n)]


def _saved(path: Path, tensors: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(tensors, path)
    return path


def _t(*shape: int, dtype: Any = None) -> Any:
    return torch.randn(*shape).mul(0.1).to(dtype or torch.bfloat16)


def _producer(tmp: Path) -> Path:
    """The bf16 trainer's own State for the tiny base: what every rule below lets through."""
    return write_bf16_state(tmp / "out", 2, H, N, runtime_values(2, H), step=None)


def _refused(v: Verdict, code: str, message: str) -> None:
    assert v.add.rc == 1, v.add.out
    assert f"refused: {code} {message}" in v.add.err
    assert "Traceback" not in v.add.err


def _accepted(v: Verdict, *warnings: str) -> None:
    assert v.add.rc == 0, v.add.err
    assert v.validate.rc == 0
    assert [code for code, _sev, _msg in v.findings] == list(warnings)


# --- upload: the file itself ------------------------------------------------------------------------------------


def test_an_empty_upload_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload: ``size == 0`` -> "uploaded state file is empty"."""
    empty = tmp_path / "src" / "state-final.pth"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    _refused(add_and_validate(capsys, tmp_path, empty), "PTH001", "the file is empty")
    _accepted(add_and_validate(capsys, tmp_path / "ok", _producer(tmp_path / "ok")))


def _state_of_size(path: Path, size: int) -> Path:
    """A bf16 State for the tiny base with one more tensor, zeros (a hole on disk), that brings the file to
    exactly ``size`` bytes: the server ignores the tensor; only the size counts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    records, storages = _layers()

    def build(name: str, numel: int) -> list[tuple[str, bytes | Zeros]]:
        recs = [*records, tensor_record(name, "BFloat16Storage", "2", (numel,))]
        ents: list[tuple[str, bytes | Zeros]] = [(f"archive/data/{i}", s) for i, s in enumerate(storages)]
        ents.append(("archive/data/2", Zeros(numel * 2)))
        tail = [("archive/data.pkl", pickle_dict(recs)), ("archive/byteorder", b"little"), ("archive/version", b"3\n")]
        return [*ents, *tail]

    def length(ents: list[tuple[str, bytes | Zeros]]) -> int:
        return sum(76 + 2 * len(n.encode()) + len(d) for n, d in ents) + 22  # headers (30 + 46), names, data, end

    for name in ("pad", "pads"):  # one name byte more fixes the parity
        probe = 1 << 27  # numel written as BININT either way
        rest = size - (length(build(name, probe)) - 2 * probe)
        if rest % 2 == 0:
            write_zip_file(path, build(name, rest // 2))
            assert path.stat().st_size == size
            return path
    raise AssertionError("unreachable")


@pytest.mark.slow
def test_sta005_an_upload_over_512_mib_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload: ``size > kMaxUploadedStateBytes`` (512 MiB) -> "uploaded state file exceeds the 512 MiB limit".
    Exactly 512 MiB passes (STA006 only, for the padding tensor), one byte more is STA005, for ``add`` (nothing
    copied) and for ``validate`` of a registry that holds it."""
    over = _state_of_size(tmp_path / "src" / "state-final.pth", LIMIT + 1)
    v = add_and_validate(capsys, tmp_path, over)
    _refused(v, "STA005", f"{LIMIT + 1} bytes; the server refuses State uploads over {LIMIT}")
    root = fresh_registry(tmp_path / "reg2")
    small = _producer(tmp_path / "small")
    assert (
        run(capsys, "add", root, small, "--base", BASE, "--data-version", "v1", "--train", train_file(tmp_path)).rc == 0
    )
    rel = f"{BASE}/state/v1/state-final.pth"
    for size, codes, rc in ((LIMIT, ["STA006"], 0), (LIMIT + 1, ["STA005", "STA006"], 1)):
        (root / rel).unlink()
        _state_of_size(root / rel, size)
        republish(root, rel)
        report = run(capsys, "validate", root, "--format", "json", "--no-cache")
        assert report.rc == rc
        assert sorted(f["code"] for f in report.json()["findings"] if f["path"] == rel) == codes
        if rc:
            [f] = [f for f in report.json()["findings"] if f["code"] == "STA005"]
            assert f["message"] == f"{LIMIT + 1} bytes; the server refuses State uploads over {LIMIT}"


def test_zeros_are_written_as_the_zip_writer_writes_them(tmp_path: Path) -> None:
    """The hole-writing zip writer of the test above gives the bytes of ``write_zip``."""
    entries = [("archive/data/0", bytes(1000)), ("archive/version", b"3\n")]
    write_zip_file(tmp_path / "a", [("archive/data/0", Zeros(1000)), ("archive/version", b"3\n")])
    assert (tmp_path / "a").read_bytes() == write_zip(entries)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("v141b-s1224.pth", True),
        ("s" * 124 + ".pth", True),
        ("state:1224.pth", False),
        ("st?te.pth", False),
        ("s" * 177 + ".pth", False),
    ],
    ids=["seed-name", "128-chars", "colon", "question-mark", "181-chars"],
)
def test_file_names_the_server_refuses_are_refused(
    name: str, ok: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """upload: the basename longer than 180 bytes, or holding a control character or one of ``<>:"|?*`` ->
    "invalid uploaded state filename". The registry's names (LAY004: letters, digits, '.', '_', '-', at most 128)
    are a subset of the server's: a name between 129 and 180 characters is refused by the registry only."""
    state = tmp_path / "src" / name
    state.parent.mkdir()
    state.write_bytes(_producer(tmp_path / "made").read_bytes())
    v = add_and_validate(capsys, tmp_path, state)
    if ok:
        _accepted(v)
    else:
        assert v.add.rc == 2 and "(LAY004)" in v.add.err and "Traceback" not in v.add.err


# --- upload: the archive and its tensors ------------------------------------------------------------------------


def test_an_unreadable_archive_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload: ``PthArchive::open`` / ``parse_pth_tensor_records`` fail -> "invalid state PTH: ...": a file cut
    short, and a compressed entry (the server reads stored entries only, ``read_stored_entry``). torch.save's own
    layout (64-byte aligned storages, ``.format_version``, memo opcodes) is read by both."""
    good = _saved(tmp_path / "src" / "torch-save.pth", {f"blocks.{i}.att.time_state": _t(H, N, N) for i in range(2)})
    _accepted(add_and_validate(capsys, tmp_path / "a", good))
    cut = tmp_path / "src" / "cut.pth"
    cut.write_bytes(good.read_bytes()[:-100])
    v = add_and_validate(capsys, tmp_path / "b", cut)
    assert v.add.rc == 1 and "refused: PTH001" in v.add.err
    deflated = tmp_path / "src" / "deflated.pth"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    v = add_and_validate(capsys, tmp_path / "c", deflated)
    assert v.add.rc == 1 and "refused: PTH011" in v.add.err


def test_a_layer_that_is_no_number_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload: ``blocks.<x>.att.time_state`` with ``x`` not all digits -> "invalid state tensor name"."""
    records, storages = _layers()
    records.append(tensor_record("blocks.x.att.time_state", "BFloat16Storage", "2", (H, N, N)))
    bad = _crafted(tmp_path / "src" / "state-final.pth", records, [*storages, storages[0]])
    _refused(add_and_validate(capsys, tmp_path, bad), "STA001", "3 state tensors for a 2-layer base; unexpected")


def test_a_layer_number_with_a_leading_zero_is_refused_deliberately(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server reads ``blocks.01.att.time_state`` as layer 1 (``std::stoi``, then ``strtol``) and takes the
    file; the registry refuses it: no trainer writes that name, and a torch consumer looking up
    ``blocks.1.att.time_state`` (RWKV-PEFT's ``load_state_dict``, RWKV-Runner) would not find layer 1."""
    records, storages = _layers(1)
    records.append(tensor_record("blocks.01.att.time_state", "BFloat16Storage", "1", (H, N, N)))
    bad = _crafted(tmp_path / "src" / "state-final.pth", records, [storages[0], storages[0]])
    _refused(add_and_validate(capsys, tmp_path, bad), "STA001", "2 state tensors for a 2-layer base; missing")


def test_a_layer_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload and load: the same layer twice -> "duplicate state tensor"."""
    records, storages = _layers()
    records.append(records[1])
    bad = _crafted(tmp_path / "src" / "state-final.pth", records, storages)
    _refused(add_and_validate(capsys, tmp_path, bad), "PTH007", "tensor name 'blocks.1.att.time_state' appears twice")


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float16", "float64"])
def test_only_bf16_and_fp32_time_states_pass(dtype: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload and load: a time state neither ``kBFloat16`` nor ``kFloat32`` -> "invalid shape or dtype for state
    tensor" (a float64 one does not even parse: the reader knows BFloat16Storage and FloatStorage)."""
    state = _saved(
        tmp_path / "src" / "s.pth",
        {f"blocks.{i}.att.time_state": _t(H, N, N, dtype=getattr(torch, dtype)) for i in range(2)},
    )
    v = add_and_validate(capsys, tmp_path, state)
    if dtype in ("bfloat16", "float32"):
        _accepted(v)
    else:
        _refused(v, "STA003", f"blocks.0.att.time_state is {dtype} (and 1 more: STA003)")


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ([(H, N, N), (H, N, N)], None),
        ([(H, N, 32), (H, N, 32)], "blocks.0.att.time_state has shape [2, 64, 32], the base needs [2, 64, 64]"),
        ([(H * N, N), (H * N, N)], "blocks.0.att.time_state has shape [128, 64], the base needs [2, 64, 64]"),
        ([(4, N, N), (4, N, N)], "blocks.0.att.time_state has shape [4, 64, 64], the base needs [2, 64, 64]"),
        ([(H, N, N), (4, N, N)], "blocks.1.att.time_state has shape [4, 64, 64], the base needs [2, 64, 64]"),
    ],
    ids=["fits", "not-square", "two-dims", "other-base", "inconsistent"],
)
def test_the_shape_must_be_the_bases(
    shapes: list[tuple[int, ...]], message: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """upload: three positive dimensions, the last two equal, the same for every layer ("invalid shape or dtype",
    "inconsistent state tensor shapes"); load: exactly ``[dims.heads, dims.head_size, dims.head_size]``."""
    state = _saved(tmp_path / "src" / "s.pth", {f"blocks.{i}.att.time_state": _t(*s) for i, s in enumerate(shapes)})
    v = add_and_validate(capsys, tmp_path, state)
    if message is None:
        _accepted(v)
    else:
        _refused(v, "STA002", message)


def test_a_storage_range_beyond_its_storage_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload: ``storage_offset`` at or past the storage's end, or the tensor's last element beyond it -> "state
    tensor range exceeds storage"; inside a larger shared storage it passes (DeepSpeed's flat buffer, as RWKV-PEFT
    under ``deepspeed_stage_1`` saves it)."""
    flat = write_peft_state(tmp_path / "proj", 0, peft_state_dict(2, H, flat_buffer=True, pad=8))
    _accepted(add_and_validate(capsys, tmp_path / "ok", flat))
    records, storages = _layers()
    records[1] = _record("blocks.1.att.time_state", "1", (H, N, N), offset=LANE // 2)
    bad = _crafted(tmp_path / "src" / "state-final.pth", records, storages)
    _refused(
        add_and_validate(capsys, tmp_path / "bad", bad),
        "PTH006",
        f"tensor 'blocks.1.att.time_state' spans elements {LANE // 2}..{LANE + LANE // 2} of storage '1', which has "
        f"{LANE}",
    )


def test_a_storage_of_the_wrong_size_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload (``compute_tensor_stats``): ``storage_size * dtype_bytes != entry size`` -> "storage byte size
    mismatch for tensor"."""
    records, storages = _layers()
    storages[1] = storages[1][:-2]
    bad = _crafted(tmp_path / "src" / "state-final.pth", records, storages)
    _refused(
        add_and_validate(capsys, tmp_path, bad),
        "PTH006",
        f"storage '1' declares {LANE} x bfloat16 ({2 * LANE} bytes) but archive/data/1 holds {2 * LANE - 2} bytes",
    )


def test_a_file_without_time_states_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload: no ``blocks.N.att.time_state`` at all -> "no blocks.N.att.time_state tensors found"."""
    other = _saved(tmp_path / "src" / "s.pth", {"blocks.0.att.time_shift": _t(128), "blocks.1.att.time_shift": _t(128)})
    v = add_and_validate(capsys, tmp_path, other)
    _refused(v, "IDX003", "the file is neither a State (blocks.N.att.time_state) nor a MiSS adapter")


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        ((0, 1), None),
        ((0,), "1 state tensors for a 2-layer base; missing ['blocks.1.att.time_state']"),
        ((1,), "1 state tensors for a 2-layer base; missing ['blocks.0.att.time_state']"),
        ((0, 1, 2), "3 state tensors for a 2-layer base; unexpected ['blocks.2.att.time_state']"),
    ],
    ids=["all", "missing-last", "not-from-0", "one-more"],
)
def test_every_layer_of_the_base_once(
    layers: tuple[int, ...], message: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """upload: layers ``0 .. n-1`` without a gap ("state PTH layers must be contiguous starting at blocks.0");
    load: no layer at or past the base's (``layer >= dims.layers``: "invalid state tensor name") and none
    missing ("state PTH is missing blocks.<l>.att.time_state")."""
    state = _saved(tmp_path / "src" / "s.pth", {f"blocks.{i}.att.time_state": _t(H, N, N) for i in layers})
    v = add_and_validate(capsys, tmp_path, state)
    if message is None:
        _accepted(v)
    else:
        _refused(v, "STA001", message)


def test_sta006_other_tensors_are_ignored_with_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """upload and load skip every tensor that is no time state (``if (!is_time_state_tensor(record.name))
    continue``): the file passes, with STA006 naming them (RWKV-PEFT's merge_state.py would copy them into the base).
    One whose storage the server's reader does not know (float64) makes the whole file unreadable to it: STA003."""
    tensors = {f"blocks.{i}.att.time_state": _t(H, N, N) for i in range(2)}
    extra = _saved(
        tmp_path / "src" / "extra.pth", {**tensors, "emb.weight": _t(4, 128), "blocks.0.att.time_shift": _t(128)}
    )
    v = add_and_validate(capsys, tmp_path / "a", extra)
    _accepted(v, "STA006")
    assert v.findings == [
        (
            "STA006",
            "warning",
            "2 tensor(s) besides the time states: ['emb.weight', 'blocks.0.att.time_shift']",
        )
    ]
    double = _saved(tmp_path / "src" / "double.pth", {**tensors, "step": torch.zeros(1, dtype=torch.float64)})
    _refused(
        add_and_validate(capsys, tmp_path / "b", double),
        "STA003",
        "step is float64: the server's reader takes bfloat16 and float32",
    )


# --- where the registry is deliberately stricter, or warns only ---------------------------------------------------


def test_nan_is_refused_though_the_server_would_load_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The server neither refuses NaN nor Inf on upload (``update_minmax`` skips NaN) nor on load; the registry
    does (STA004): both trainers refuse to write such a State (``rwkv_state_tune`` stops on a non-finite dState,
    the bf16 export throws "nonfinite state export"), and every token generated from it would be NaN."""
    values = _t(H, N, N)
    values[0, 0, 0] = float("nan")
    state = _saved(
        tmp_path / "src" / "s.pth", {"blocks.0.att.time_state": values, "blocks.1.att.time_state": _t(H, N, N)}
    )
    _refused(add_and_validate(capsys, tmp_path, state), "STA004", "blocks.0.att.time_state holds 1 NaN/Inf value(s)")


def test_a_strided_state_is_refused_though_the_server_would_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``torch.save`` of a transposed view keeps its strides; the server walks them (non-negative, inside the
    storage: ``load_tensor_select``'s strided path) and takes the file. The registry's reader takes contiguous
    tensors only (PTH013): no producer writes a strided State, and the hint says to save ``.contiguous()``."""
    tensors = {f"blocks.{i}.att.time_state": _t(H, N, N).transpose(1, 2) for i in range(2)}
    state = _saved(tmp_path / "src" / "s.pth", tensors)
    _refused(
        add_and_validate(capsys, tmp_path, state),
        "PTH013",
        "tensor 'blocks.0.att.time_state' of shape [2, 64, 64] has non-contiguous stride [4096, 1, 64]",
    )


def test_sta007_a_safetensors_state_passes_with_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The server opens an upload as a torch zip (``PthArchive::open``): a ``.safetensors`` State is refused there,
    and RWKV-PEFT loads States with ``torch.load``. The registry keeps such a State (its own feature) with STA007."""
    from safetensors.torch import save_file

    path = tmp_path / "src" / "s.safetensors"
    path.parent.mkdir()
    save_file({f"blocks.{i}.att.time_state": _t(H, N, N) for i in range(2)}, path)
    v = add_and_validate(capsys, tmp_path, path)
    _accepted(v, "STA007")
    message = "a safetensors file: the server's State upload opens torch .pth archives"
    assert v.findings == [("STA007", "warning", message)]
