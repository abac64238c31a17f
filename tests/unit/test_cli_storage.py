"""`--storage`: a directory by default, `none`, or a clear error; an app's store wins."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest
from temporalio.converter import DataConverter, ExternalStorage

from scope_temporal.cli._connect import Connection
from scope_temporal.cli._storage import DEFAULT_STORAGE, storage_driver
from scope_temporal.storage import DirectoryStorage


def test_a_directory_is_a_directory_store_created_on_first_write(tmp_path: Path) -> None:
    driver = storage_driver(str(tmp_path / "payloads"))
    assert isinstance(driver, DirectoryStorage) and driver.root == tmp_path / "payloads"
    assert not driver.root.exists()  # a command that stores nothing leaves no folder
    assert Path(".scope/payloads") == DEFAULT_STORAGE


def test_none_keeps_payloads_in_history() -> None:
    assert storage_driver("none") is None and storage_driver("NONE") is None


@pytest.mark.parametrize("spec", ["s3://bucket", "gs://bucket/prefix"])
def test_an_object_store_url_says_where_to_configure_it(spec: str) -> None:
    with pytest.raises(click.BadParameter, match="data_converter"):
        storage_driver(spec)


def test_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(click.BadParameter, match="is a file"):
        storage_driver(str(tmp_path / "f"))


def test_the_connection_offloads_unless_the_app_converter_has_a_store(tmp_path: Path) -> None:
    store = DirectoryStorage(tmp_path)
    plain = Connection("localhost:7233", "default", "scope", None, store)
    external = plain._converter().external_storage
    assert external is not None and list(external.drivers) == [store]
    own = ExternalStorage(drivers=[DirectoryStorage(tmp_path / "app")])
    app = dataclasses.replace(DataConverter.default, external_storage=own)
    assert Connection("a", "n", "q", app, store)._converter().external_storage is own
    assert Connection("a", "n", "q", None, None)._converter() is DataConverter.default
