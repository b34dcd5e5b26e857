from __future__ import annotations

from django import forms

from .services import BUDGET_PRESETS


class UploadForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the file name.")
    file = forms.FileField(help_text="CSV with a header row; UTF-8 or Windows-1252; , ; tab or | separated.")
    empty_is_missing = forms.BooleanField(required=False, initial=True, label="Empty cells are missing values")
    markers = forms.CharField(max_length=500, required=False, initial="?, NA", label="Other missing-value markers",
                              help_text="Comma-separated, e.g. ?, NA, n/a")


class SchemaImportForm(forms.Form):
    schema_file = forms.FileField(required=False, label="Schema JSON file")
    schema_text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), label="or paste JSON")


class BudgetForm(forms.Form):
    preset = forms.ChoiceField(
        choices=[(k, v["label"]) for k, v in BUDGET_PRESETS.items()] + [("custom", "Custom values")],
        widget=forms.RadioSelect, initial="moderate")
    epsilon = forms.CharField(max_length=40, required=False, help_text="Total epsilon cap for all releases")
    delta = forms.CharField(max_length=40, required=False,
                            help_text="Total delta cap (0 allows only pure-DP mechanisms)")

    def clean(self):
        data = super().clean()
        preset = data.get("preset")
        if preset in BUDGET_PRESETS:
            data["epsilon"] = BUDGET_PRESETS[preset]["epsilon"]
            data["delta"] = BUDGET_PRESETS[preset]["delta"]
        elif not (data.get("epsilon") or "").strip():
            raise forms.ValidationError("enter an epsilon cap for a custom budget")
        data["delta"] = (data.get("delta") or "0").strip()
        return data


class GrantForm(forms.Form):
    username = forms.CharField(max_length=150)
    action = forms.ChoiceField(choices=[("grant", "grant"), ("revoke", "revoke")])
