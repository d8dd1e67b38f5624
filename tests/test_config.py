import pytest

from spade_llm.config import RunConfig, load_config
from spade_llm.errors import UserError


def test_default_yaml_matches_model_defaults():
    assert load_config() == RunConfig()


def test_yaml_then_overrides(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("controller:\n  epochs: 5\nsolver:\n  max_turns: 4\n")
    cfg = load_config(f, {"controller": {"epochs": 7}})
    assert cfg.controller.epochs == 7 and cfg.solver.max_turns == 4 and cfg.controller.tasks_per_epoch == 8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("controller: [1, 2\n", "not valid YAML"),
        ("- a\n- b\n", "expected a mapping"),
        ("controller:\n  epochs: -1\n", "controller.epochs"),
        ("controller:\n  band: [0.8, 0.2]\n", "band"),
        ("nonsense_key: 1\n", "nonsense_key"),
    ],
)
def test_bad_config_is_one_clear_user_error(tmp_path, text, message):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(UserError, match=message):
        load_config(f)


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_every_field_documented():
    def walk(model):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no docstring"
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                walk(ann)

    walk(RunConfig)


def test_json_mode_still_reads_as_a_response_format():
    config = load_config(None, {"generator": {"json_mode": False}, "solver": {"json_mode": True}})
    assert config.generator.response_format == "text"
    assert not hasattr(config.solver, "response_format")  # solver requests carry none: the old key is dropped
    assert load_config().generator.response_format == "json_schema"  # the default asks for the task schema
    assert "json_mode" not in config.model_dump()["generator"]


def test_a_shipped_preset_loads_by_name_and_a_file_of_that_name_wins(tmp_path, monkeypatch):
    config = load_config("local-cpu")
    assert config.llm.max_inflight_per_endpoint == 1 and config.solver.max_tokens == 512
    assert config.llm.timeout_s >= 60 and config.llm.answer_timeout_s > config.llm.timeout_s
    monkeypatch.chdir(tmp_path)
    (tmp_path / "local-cpu").write_text("seed: 7\n")
    assert load_config("local-cpu").seed == 7 and load_config("local-cpu").llm.max_inflight_per_endpoint is None
    with pytest.raises(UserError, match="or name a preset: local-cpu"):
        load_config("no-such-preset")
