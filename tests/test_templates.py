import pytest

from spade_llm.errors import TemplateError, UserError
from spade_llm.templates import TEMPLATE_VARIABLES, Prompts, list_templates


def test_packaged_templates_render_with_their_variables():
    prompts = Prompts()
    assert prompts.check_all() == []
    for name, variables in TEMPLATE_VARIABLES.items():
        assert prompts.render(name, **variables).strip()
    assert "solver/repair.j2" in list_templates()


def test_user_folder_overrides_by_name(tmp_path):
    (tmp_path / "solver").mkdir()
    (tmp_path / "solver" / "first.j2").write_text("CUSTOM {{ task.entry_point }}")
    prompts = Prompts(tmp_path)
    assert prompts.render("solver/first.j2", task={"entry_point": "zz"}, public_tests=[]) == "CUSTOM zz\n"
    assert "Propose" in prompts.render("generator/propose.j2", **TEMPLATE_VARIABLES["generator/propose.j2"])


def test_undefined_variable_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "solver").mkdir()
    (tmp_path / "solver" / "first.j2").write_text("{{ task.entry_point }} {{ tsk.description }}")
    prompts = Prompts(tmp_path)
    with pytest.raises(TemplateError, match=r"first\.j2.*tsk"):
        prompts.render("solver/first.j2", task={"entry_point": "f"}, public_tests=[])
    assert any("tsk" in p for p in prompts.check_all())


def test_syntax_error_and_unknown_names_reported(tmp_path):
    (tmp_path / "solver").mkdir()
    (tmp_path / "solver" / "repair.j2").write_text("{% if %}")
    (tmp_path / "solver" / "typo.j2").write_text("x")
    problems = Prompts(tmp_path).check_all()
    assert any("syntax error" in p for p in problems)
    assert any("typo.j2" in p and "not a template" in p for p in problems)


def test_missing_folder():
    with pytest.raises(UserError, match="not found"):
        Prompts("/nonexistent/prompts")
