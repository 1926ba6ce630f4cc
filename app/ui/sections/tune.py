"""The panel's Tune section: one widget per live setting of `RuntimeSettings` (chosen from the field's
type and metadata) and "Reset to defaults" (the loaded model's values). The settings of one model kind
(motion matching's, the motion VAE's variation) are in that kind's own section instead."""

import dataclasses

from imgui_bundle import imgui

from app.ui.state import reset_settings
from app.ui.theme import DIM_COLOUR
from app.ui.widgets import fit_label, remember_rect, tooltip
from pfnn_core.runtime.settings import RuntimeSettings, tunable_fields

KIND_SECTION_FIELDS = ("matching_", "variation")  # names (prefixes) shown by the Matching and Motion VAE sections


def setting_widget(settings: RuntimeSettings, field_: dataclasses.Field) -> bool:
    """One widget for one settings field, chosen from its type and metadata; writes the value back."""
    meta = field_.metadata
    name = meta.get("label", field_.name)
    value = getattr(settings, field_.name)
    # beta's range is the loaded model's (around its trained value): said beside it
    note = "{:g}-{:g}".format(*settings.limits(field_.name)) if field_.name == "beta" else ""
    if isinstance(value, bool):
        label = f"{name}##{field_.name}"
    else:
        label = fit_label(name, field_.name, note)
        if label.startswith("##"):  # the label and note went on the line above
            tooltip(meta.get("help", ""))
            note = ""
    if isinstance(value, bool):
        changed, value = imgui.checkbox(label, value)
    elif "choices" in meta:
        choices = list(meta["choices"])
        changed, index = imgui.combo(label, choices.index(value) if value in choices else 0, choices)
        value = choices[index]
    elif isinstance(value, int):
        low, high = settings.limits(field_.name)
        changed, value = imgui.slider_int(label, value, int(low), int(high))
    else:
        low, high = settings.limits(field_.name)  # the loaded model's range (e.g. beta around its trained value)
        changed, value = imgui.slider_float(label, float(value), low, high, "%.3g")
        if note:
            imgui.same_line()
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), note)
    tooltip(meta.get("help", ""))
    if changed:
        setattr(settings, field_.name, value)
    return changed


def tune_section(state) -> None:
    if imgui.button("Reset to defaults"):
        reset_settings(state.settings, state.model_defaults)
    remember_rect(state, "reset_settings")
    tooltip("The loaded model's values (its walk and run speeds, for the current style) and the runtime's "
             "defaults for the rest")
    imgui.push_item_width(140)
    for field_ in tunable_fields(state.settings):
        if not field_.name.startswith(KIND_SECTION_FIELDS):
            setting_widget(state.settings, field_)
    imgui.pop_item_width()
