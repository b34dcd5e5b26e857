"""The release form, generated from the chosen mechanism's ParamSpec list."""

from __future__ import annotations

import math

from django import forms

from mechanisms.base import ParamSpec

from .services.parsing import PARAM_PREFIX


def _field(spec: ParamSpec, schema) -> forms.Field:
    required = False  # empty means "default" (or "derive automatically" for optional params)
    end = "" if spec.help.rstrip().endswith(".") else "."
    help_text = spec.help + (
        f"{end} Leave empty for the automatic value." if spec.optional and not spec.empty_means else ""
    )
    attrs = {}
    if spec.minimum is not None:
        attrs["min"] = spec.minimum
    if spec.maximum is not None:
        attrs["max"] = spec.maximum
    if spec.type == "int":
        return forms.IntegerField(
            required=required, help_text=help_text, initial=spec.default, widget=forms.NumberInput(attrs=attrs)
        )
    if spec.type == "float":
        return forms.CharField(
            required=required,
            help_text=help_text,
            initial=spec.default,
            max_length=40,
            widget=forms.TextInput(attrs={"inputmode": "decimal"}),
        )
    if spec.type == "bool":
        return forms.BooleanField(required=False, help_text=help_text, initial=bool(spec.default))
    if spec.type == "choice":
        return forms.ChoiceField(
            choices=[(c, c) for c in spec.choices], help_text=help_text, initial=spec.default, required=False
        )  # not sent (e.g. a script's POST): the default applies
    if spec.type == "column":
        names = spec.column_choices(schema) if schema is not None else []
        empty = f"({spec.empty_means or 'automatic'})"
        choices = ([("", empty)] if spec.optional else []) + [(n, n) for n in names]
        return forms.ChoiceField(choices=choices, required=not spec.optional, help_text=help_text, initial=spec.default)
    return forms.CharField(required=required, help_text=help_text, initial=spec.default, max_length=500)


def suggested_delta(n_rows: int) -> str:
    """The power of ten at or below 1/(10 n): the usual advice is delta much smaller than 1/n (a delta
    near 1/n allows releasing one record outright). n is public."""
    return f"1e-{math.ceil(math.log10(10 * max(int(n_rows), 1)))}"


class ReleaseForm(forms.Form):
    epsilon = forms.CharField(
        max_length=40,
        help_text="Privacy loss charged to the dataset's budget, e.g. 1 or 0.5: "
        "how much the synthetic table can reveal about any one person "
        "(smaller: more private, more noise)",
    )
    delta = forms.CharField(
        max_length=40, required=False, initial="0", help_text="Needed by approximate-DP mechanisms only, e.g. 1e-6"
    )
    rows = forms.IntegerField(min_value=1, help_text="Number of synthetic rows")

    def __init__(self, *args, mechanism_cls=None, schema=None, n_rows=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.mechanism_cls = mechanism_cls
        if n_rows:
            self.fields["rows"].initial = n_rows
        if mechanism_cls is not None and not (mechanism_cls.needs_delta or mechanism_cls.gaussian_mode):
            self.fields["delta"].widget = forms.HiddenInput()
        elif mechanism_cls is not None and n_rows and mechanism_cls.needs_delta:
            self.fields["delta"].initial = suggested_delta(n_rows)
            self.fields["delta"].help_text = (
                f"Probability that the epsilon guarantee fails; keep it well below "
                f"1/n = 1/{n_rows:,}. Suggested: {suggested_delta(n_rows)}"
            )
        elif mechanism_cls is not None and n_rows:  # pure by default, (epsilon, delta) with noise_type=gaussian
            self.fields["delta"].help_text = (
                f"0 for pure epsilon-DP (noise_type laplace, the default). With "
                f"noise_type gaussian give a delta well below 1/n = 1/{n_rows:,}, "
                f"e.g. {suggested_delta(n_rows)}"
            )
        self.n_rows = n_rows
        self.param_names = []
        for spec in mechanism_cls.params if mechanism_cls else ():
            name = PARAM_PREFIX + spec.name
            self.fields[name] = _field(spec, schema)
            self.fields[name].label = spec.name
            self.fields[name].steward_help = mechanism_cls.help(spec.name)
            self.param_names.append(name)

    def apply_guide(self, guide: dict | None) -> dict | None:
        """Carry the purpose step over: epsilon, delta where the predicted configuration takes
        one, the parameters the prediction assumed (e.g. Gaussian mode), the ml target; and ask for a
        confirmation when the mechanism is predicted to fail. Returns this mechanism's prediction."""
        guide = guide or {}
        cls = self.mechanism_cls
        prediction = next((m for m in guide.get("mechanisms", ()) if cls and m["mechanism"] == cls.name), None) or {}
        assumed = prediction.get("params", {})
        if guide:
            self.fields["epsilon"].initial = f"{guide['epsilon']:g}"
            takes_delta = cls is not None and (cls.needs_delta or "gaussian" in assumed.values())
            if takes_delta and guide["delta"] > 0 and guide.get("delta_given"):  # else the form's own suggestion
                self.fields["delta"].initial = f"{guide['delta']:g}"
            elif takes_delta and self.n_rows:  # the suggestion, never above the delta the guide planned with
                # (by default the dataset's remaining delta: a suggestion above it would be refused on submit)
                suggested = suggested_delta(self.n_rows)
                planned = float(guide["delta"])
                self.fields["delta"].initial = (
                    suggested if planned <= 0 or float(suggested) <= planned else f"{planned:g}"
                )
        for key, value in assumed.items():
            if PARAM_PREFIX + key in self.fields:
                self.fields[PARAM_PREFIX + key].initial = value
        target = guide.get("target") if guide.get("purpose") == "ml" else None
        field = self.fields.get(PARAM_PREFIX + "target")
        if target and field is not None and target in dict(getattr(field, "choices", ())):
            field.initial = target  # a labelled mode trains for the purpose's column (as predicted)
        if prediction.get("status") == "would-fail":
            self.fields["confirm_would_fail"] = forms.BooleanField(
                required=True,
                label=f"Run {prediction['mechanism']} anyway: {prediction['reason']}",
                error_messages={
                    "required": f"{prediction['mechanism']} is predicted to fail on this table: tick the "
                    "box to confirm you want to spend budget on it anyway"
                },
            )
        return prediction or None

    def ask_high_error_confirmation(self, reason: str | None) -> None:
        """A release predicted to keep little of the table (confirmations.high_error_reason) needs a ticked box."""
        if reason:
            self.fields["confirm_high_error"] = forms.BooleanField(  # checked by the view after the values
                required=False,
                label=f"Release anyway: {reason}.",
                error_messages={
                    "required": f"{reason}: tick the box to confirm you want to spend budget on it, or raise epsilon"
                },
            )

    def effective_values(self) -> dict:
        """Each field's value as the form would submit it now: the posted value, else its initial value
        (the guide's presets included), so an estimate shown on load is for the release that would run."""
        return {name: self[name].value() for name in self.fields}

    def main_fields(self) -> list:
        """epsilon, delta, rows and the confirmations (would fail, high error): shown openly."""
        return [self[n] for n in self.fields if n not in self.param_names]

    def params_have_errors(self) -> bool:
        return any(self.errors.get(n) for n in self.param_names) if self.is_bound else False

    def param_fields(self) -> list:
        """The mechanism's parameters: behind "Advanced" (their defaults suit most releases)."""
        return [self[n] for n in self.param_names]

    def params(self) -> dict:
        """Submitted parameter values; empty ones are left out (the mechanism's default applies)."""
        out = {}
        specs = {s.name: s for s in self.mechanism_cls.params}
        for name in self.param_names:
            value = self.cleaned_data.get(name)
            key = name[len(PARAM_PREFIX) :]
            if value in (None, "") and specs[key].type != "bool":
                if specs[key].optional:
                    out[key] = None
                continue
            if value == specs[key].default or str(value) == str(specs[key].default):
                continue  # the default applies (and a default like "auto" is not re-parsed as "empty")
            out[key] = value
        return out
