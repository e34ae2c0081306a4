"""A person's run lists every model-backed action, disabled: the names come from the action
registry (agent/llm_actions.py), so a new model-backed action cannot be left out of the TUI."""

from __future__ import annotations

from agent.llm_actions import MODEL_ACTIONS, LLMActions
from agent.models import make_model
from tests.tui.conftest import SIZE, opened_run

NEEDS = " (needs a model)"


def _model_backed(tmp_path) -> set[str]:
    """Every action an agent's ``LLMActions`` offers as kind ``llm`` (what needs a model)."""
    replies = tmp_path / "replies.txt"
    replies.write_text("unused\n")
    model = make_model(f"scripted/{replies}")
    return {s.name for s in LLMActions(model, model).specs() if s.kind == "llm"}


def test_the_registry_names_every_model_backed_action(tmp_path):
    assert set(MODEL_ACTIONS) == _model_backed(tmp_path) and len(MODEL_ACTIONS) == 6


async def test_a_persons_run_disables_every_model_backed_action(human_app, tmp_path):
    async with human_app.run_test(size=SIZE) as pilot:
        screen = await opened_run(human_app, pilot)
        options = list(screen.query_one("#palette").options)
    disabled = {str(o.prompt).removesuffix(NEEDS) for o in options if o.disabled}
    assert disabled == _model_backed(tmp_path)
    assert all(str(o.prompt).endswith(NEEDS) for o in options if o.disabled)
