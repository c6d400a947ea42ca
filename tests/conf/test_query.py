"""The query settings of a config file, and the cache that serves them while the file is unchanged."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import conf.loader
import conf.query
from conf import ConfigError, load_config
from conf.query import CACHE_VARIABLE, QuerySettings, cache_folder, load_query_settings

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG = (
    "input:\n  path: in\n"
    "storage:\n  root: {root}\n  gold_database: Analytics\n"
    "spark:\n  conf:\n    spark.sql.session.timeZone: UTC\n    spark.hadoop.fs.s3a.path.style.access: true\n"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "lake.yaml"
    path.write_text(CONFIG.format(root=tmp_path / "lake"), encoding="utf-8")
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment without overrides whose cache folder is the test's own."""
    return {CACHE_VARIABLE: str(tmp_path / "cache")}


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files validated (by ``conf.loader.read_config``) while the test runs."""
    seen: list[Path] = []
    validate = conf.loader.read_config

    def counted(content: bytes, source: Path, env: dict[str, str]) -> object:
        seen.append(source)
        return validate(content, source, env)

    monkeypatch.setattr(conf.loader, "read_config", counted)
    return seen


def _entries(env: dict[str, str]) -> list[Path]:
    return sorted(Path(env[CACHE_VARIABLE]).glob("*.json"))


def test_the_query_settings_are_those_of_the_validated_configuration(
    config: Path, env: dict[str, str], tmp_path: Path
) -> None:
    settings = load_query_settings(config, env)

    assert settings == QuerySettings.of(load_config(config, env={}))
    assert settings.root == str(tmp_path / "lake")
    assert settings.layers["gold"] == "Analytics"
    assert settings.layers["bronze"] == "binlog_bronze"
    assert settings.spark_conf == {"spark.sql.session.timeZone": "UTC", "spark.hadoop.fs.s3a.path.style.access": True}


def test_an_unchanged_file_is_validated_once(config: Path, env: dict[str, str], validations: list[Path]) -> None:
    first = load_query_settings(config, env)
    again = load_query_settings(config, env)

    assert again == first
    assert validations == [config]
    assert len(_entries(env)) == 1


def test_an_edited_file_is_validated_again_and_a_misspelt_key_still_fails(
    config: Path, env: dict[str, str], validations: list[Path], tmp_path: Path
) -> None:
    load_query_settings(config, env)
    config.write_text(CONFIG.format(root=tmp_path / "lake") + "decoder:\n  verify_checksum: false\n", encoding="utf-8")

    for _ in range(2):  # a file that fails is never kept
        with pytest.raises(ConfigError) as raised:
            load_query_settings(config, env)
        assert str(raised.value) == f"{config}: decoder.verify_checksum: unknown key"
    with pytest.raises(ConfigError, match=r"decoder\.verify_checksum: unknown key"):
        load_config(config, env={})

    config.write_text(CONFIG.format(root=tmp_path / "elsewhere"), encoding="utf-8")
    assert load_query_settings(config, env).root == str(tmp_path / "elsewhere")
    assert len(validations) == 5


def test_an_edit_that_keeps_the_modification_time_is_still_seen(
    config: Path, env: dict[str, str], tmp_path: Path
) -> None:
    load_query_settings(config, env)
    before = config.stat()
    config.write_text(CONFIG.format(root=tmp_path / "other").replace("Analytics", "Reports"), encoding="utf-8")
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))

    settings = load_query_settings(config, env)

    assert (settings.root, settings.layers["gold"]) == (str(tmp_path / "other"), "Reports")


def test_an_invalid_value_is_an_error_on_every_run(config: Path, env: dict[str, str]) -> None:
    config.write_text(config.read_text(encoding="utf-8").replace("Analytics", "no spaces allowed"), encoding="utf-8")

    for _ in range(2):
        with pytest.raises(ConfigError, match=r"storage\.gold_database: String should match pattern"):
            load_query_settings(config, env)
    assert _entries(env) == []


def test_an_override_in_the_environment_is_applied_and_bypasses_the_cache(
    config: Path, env: dict[str, str], validations: list[Path], tmp_path: Path
) -> None:
    load_query_settings(config, env)
    overridden = {**env, "BINLOG_LAKEHOUSE__STORAGE__GOLD_DATABASE": "from_env"}

    assert load_query_settings(config, overridden).layers["gold"] == "from_env"
    assert load_query_settings(config, overridden).layers["gold"] == "from_env"
    with pytest.raises(ConfigError, match=r"BINLOG_LAKEHOUSE__STORAGE__GOLD_DATABSE: unknown setting"):
        load_query_settings(config, {**env, "BINLOG_LAKEHOUSE__STORAGE__GOLD_DATABSE": "x"})
    assert load_query_settings(config, env).layers["gold"] == "Analytics"
    assert len(validations) == 4
    assert "from_env" not in _entries(env)[0].read_text(encoding="utf-8")


def test_a_changed_conf_package_or_validating_library_validates_again(
    config: Path, env: dict[str, str], validations: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_query_settings(config, env)

    changed = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", changed)
    with (changed / "models.py").open("a", encoding="utf-8") as models:
        models.write("\n# stricter now\n")
    monkeypatch.setattr(conf.query, "_CONF_FOLDER", changed)
    load_query_settings(config, env)
    load_query_settings(config, env)

    upgraded = [*conf.query._validator_stamps()[:-1], "yaml:another install"]
    monkeypatch.setattr(conf.query, "_validator_stamps", lambda: upgraded)
    load_query_settings(config, env)

    assert len(validations) == 3


def test_the_root_is_resolved_on_every_read(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "blue").mkdir()
    (tmp_path / "green").mkdir()
    (tmp_path / "current").symlink_to(tmp_path / "blue")
    config = tmp_path / "lake.yaml"
    config.write_text(CONFIG.format(root=tmp_path / "current"), encoding="utf-8")
    assert load_query_settings(config, env).root == str(tmp_path / "blue")

    (tmp_path / "current").unlink()
    (tmp_path / "current").symlink_to(tmp_path / "green")

    assert load_query_settings(config, env).root == str(tmp_path / "green")


def test_a_relative_root_resolves_against_the_project_root(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, validations: list[Path]
) -> None:
    config = tmp_path / "lake.yaml"
    config.write_text(CONFIG.format(root="data/lake"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    assert load_query_settings(config, env).root == str(PROJECT_ROOT / "data" / "lake")
    assert load_query_settings(config, env).root == str(PROJECT_ROOT / "data" / "lake")
    assert len(validations) == 1


def test_a_damaged_entry_is_replaced(config: Path, env: dict[str, str], validations: list[Path]) -> None:
    expected = load_query_settings(config, env)
    (entry,) = _entries(env)
    for damage in ("{not json", json.dumps({**json.loads(entry.read_text(encoding="utf-8")), "layers": [1]})):
        entry.write_text(damage, encoding="utf-8")
        assert load_query_settings(config, env) == expected
    assert load_query_settings(config, env) == expected
    assert len(validations) == 3


def test_an_entry_is_readable_by_its_owner_only(config: Path, env: dict[str, str]) -> None:
    load_query_settings(config, env)
    (entry,) = _entries(env)

    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700


def test_a_cache_folder_that_cannot_be_written_only_costs_the_validation(
    config: Path, tmp_path: Path, validations: list[Path]
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    env = {CACHE_VARIABLE: str(blocked / "cache")}

    assert load_query_settings(config, env) == load_query_settings(config, env)
    assert len(validations) == 2


def test_the_cache_can_be_turned_off(config: Path, validations: list[Path]) -> None:
    env = {CACHE_VARIABLE: "off"}
    assert cache_folder(env) is None
    assert load_query_settings(config, env) == load_query_settings(config, env)
    assert len(validations) == 2


def test_a_missing_file_is_the_loader_s_error(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=r"missing.yaml: cannot read config file: No such file or directory"):
        load_query_settings(tmp_path / "missing.yaml", env)


def test_the_cache_folder_is_the_variable_s_else_the_xdg_cache_home_s(tmp_path: Path) -> None:
    home = Path("~").expanduser()
    assert cache_folder({CACHE_VARIABLE: str(tmp_path)}) == tmp_path
    assert cache_folder({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "binlog-lakehouse" / "config"
    assert cache_folder({"XDG_CACHE_HOME": "relative"}) == home / ".cache" / "binlog-lakehouse" / "config"
    assert cache_folder({}) == home / ".cache" / "binlog-lakehouse" / "config"


def test_a_fresh_process_reads_a_cached_file_without_pydantic_or_yaml(config: Path, env: dict[str, str]) -> None:
    probe = (
        "import sys; from conf.query import load_query_settings; settings = load_query_settings(sys.argv[1]); "
        "print(settings.layers['gold'], 'pydantic' in sys.modules, 'yaml' in sys.modules)"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, str(config)],
            cwd=PROJECT_ROOT,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert runs == ["Analytics True True\n", "Analytics False False\n"]
