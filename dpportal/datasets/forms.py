from __future__ import annotations

from fractions import Fraction

from django import forms

from .services import BUDGET_PRESETS


class UploadForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the file name.")
    file = forms.FileField(help_text="CSV with a header row; UTF-8 or Windows-1252; , ; tab or | separated.")
    empty_is_missing = forms.BooleanField(required=False, initial=True, label="Empty cells are missing values")
    markers = forms.CharField(
        max_length=500,
        required=False,
        initial="?, NA",
        label="Other missing-value markers",
        help_text="Comma-separated, e.g. ?, NA, n/a. Blank means none: only empty cells "
        "(if ticked above) are missing, and a cell like ? or NA is read as a value.",
    )


class SchemaImportForm(forms.Form):
    schema_file = forms.FileField(required=False, label="Schema JSON file")
    schema_text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), label="or paste JSON")


class BudgetForm(forms.Form):
    preset = forms.ChoiceField(
        choices=[(k, v["label"]) for k, v in BUDGET_PRESETS.items()] + [("custom", "Custom values")],
        widget=forms.RadioSelect,
        initial="moderate",
    )
    epsilon = forms.CharField(max_length=40, required=False, help_text="Total epsilon cap for all releases")
    delta = forms.CharField(
        max_length=40, required=False, help_text="Total delta cap (0 allows only pure-DP mechanisms)"
    )

    def clean(self):
        data = super().clean()
        preset = data.get("preset")
        typed_eps, typed_delta = (data.get("epsilon") or "").strip(), (data.get("delta") or "").strip()
        if preset in BUDGET_PRESETS:
            chosen = BUDGET_PRESETS[preset]
            if _differs(typed_eps, chosen["epsilon"]) or _differs(typed_delta, chosen["delta"]):
                raise forms.ValidationError(
                    f"you typed custom values (epsilon {typed_eps or '-'}, delta {typed_delta or '-'}) but chose "
                    f'the preset "{chosen["label"]}" (epsilon {chosen["epsilon"]}, delta {chosen["delta"]}): '
                    'choose "Custom values" to use the typed values, or clear them to use the preset. '
                    "Nothing was saved."
                )
            data["epsilon"], data["delta"] = chosen["epsilon"], chosen["delta"]
            return data
        if not typed_eps:
            raise forms.ValidationError("enter an epsilon cap for a custom budget")
        data["epsilon"], data["delta"] = typed_eps, typed_delta or "0"
        return data


def _differs(typed: str, preset: str) -> bool:
    """A typed amount that is not empty and not the preset's own value (compared as exact numbers)."""
    if not typed:
        return False
    try:
        return Fraction(typed) != Fraction(preset)
    except (ValueError, ZeroDivisionError):
        return True


class GrantForm(forms.Form):
    username = forms.CharField(max_length=150)
    action = forms.ChoiceField(choices=[("grant", "grant"), ("revoke", "revoke"), ("create", "create")])
