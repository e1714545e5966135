"""My Work's filter form."""

from __future__ import annotations

from django import forms

from deliverables.work import DELIVERABLE_KINDS
from memory.forms import DATE_INPUT
from memory.models import Observation


class WorkFilterForm(forms.Form):
    project = forms.CharField(required=False, max_length=200)
    date_from = forms.DateField(required=False, widget=DATE_INPUT, label="From")
    date_to = forms.DateField(required=False, widget=DATE_INPUT, label="To")
    type = forms.ChoiceField(
        required=False, choices=[("", "All types"), *Observation.Type.choices], label="Type"
    )
    kind = forms.ChoiceField(
        required=False,
        choices=[("", "Any (or none)"), *DELIVERABLE_KINDS],
        label="Deliverable kind",
    )
