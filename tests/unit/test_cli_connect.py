"""Connection settings from the environment: the same variables as Temporal's own CLI."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from temporalio.service import TLSConfig

from scope_temporal.cli._connect import DEFAULT_ADDRESS, Connection, tls_options

VARIABLES = (
    "TEMPORAL_API_KEY",
    "TEMPORAL_TLS_CERT",
    "TEMPORAL_TLS_KEY",
    "TEMPORAL_TLS_CA",
    "TEMPORAL_TLS",
    "TEMPORAL_ADDRESS",
    "TEMPORAL_NAMESPACE",
)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_plain_connection_by_default() -> None:
    assert tls_options() == {}


def test_an_api_key_turns_tls_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_API_KEY", "key-123")
    assert tls_options() == {"tls": True, "api_key": "key-123"}


def test_mtls_reads_the_certificate_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c.pem").write_bytes(b"CERT")
    (tmp_path / "k.pem").write_bytes(b"KEY")
    monkeypatch.setenv("TEMPORAL_TLS_CERT", str(tmp_path / "c.pem"))
    monkeypatch.setenv("TEMPORAL_TLS_KEY", str(tmp_path / "k.pem"))
    tls = tls_options()["tls"]
    assert isinstance(tls, TLSConfig)
    assert (tls.client_cert, tls.client_private_key) == (b"CERT", b"KEY")


def test_half_an_mtls_pair_or_a_missing_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_TLS_CERT", str(tmp_path / "c.pem"))
    with pytest.raises(click.ClickException, match="both TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY"):
        tls_options()
    monkeypatch.setenv("TEMPORAL_TLS_KEY", str(tmp_path / "k.pem"))
    with pytest.raises(click.ClickException, match="cannot read"):
        tls_options()


def test_printed_commands_name_the_server_only_when_it_is_not_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Connection(DEFAULT_ADDRESS, "default", "scope").args() == []
    assert Connection("temporal:7233", "prod", "scope").args() == [
        "--address",
        "temporal:7233",
        "--namespace",
        "prod",
    ]
    monkeypatch.setenv("TEMPORAL_ADDRESS", "temporal:7233")
    assert Connection("temporal:7233", "default", "scope").args() == []
