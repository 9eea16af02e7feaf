# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets never shown: every secret a session has seen (the api_key, kubeconfig tokens, tokenFile
contents, exec-plugin and service-account tokens, a proxy password) is masked in every message, in
every form a message can carry it: as is, stripped, and escaped as repr() and JSON write it."""

import json


_MASK = "********"
_MIN_SECRET = 4


class Secrets(object):
    """Values that must never appear in a message, in every form a message may carry them."""

    def __init__(self, values=()):
        self._forms = set()
        for value in values:
            self.add(value)

    def add(self, value):
        if value is None:
            return
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        value = str(value)
        candidates = set([value, value.strip()])
        for line in value.splitlines():
            candidates.add(line.strip())
        forms = set()
        for candidate in candidates:
            forms.add(candidate)
            forms.add(json.dumps(candidate)[1:-1])
            forms.add(repr(candidate)[1:-1])
            forms.add(repr(candidate.encode("utf-8"))[2:-1])
        self._forms.update(form for form in forms if len(form.strip()) >= _MIN_SECRET)

    def extend(self, values):
        for value in values:
            self.add(value)

    def __len__(self):
        return len(self._forms)

    def scrub(self, text):
        text = str(text)
        # Longest first, so a form that contains another is masked whole.
        for form in sorted(self._forms, key=len, reverse=True):
            text = text.replace(form, _MASK)
        return text


def scrub(text, secrets):
    """text with every secret (a Secrets or an iterable of values) masked."""
    if not isinstance(secrets, Secrets):
        secrets = Secrets(secrets)
    return secrets.scrub(text)
