"""The consolidation pass: keeps memory true and small without a person's hand.

It folds near-duplicates, supersedes reversed decisions, abandons refuted hypotheses and
demotes rows never recalled; it never deletes and never changes a row a person wrote,
edited or pinned. candidates.py finds what to look at (bounded), rules.py decides offline,
model.py asks the observer's model in batches, plan.py holds what every change must obey,
run.py applies a pass as revisions that can be undone.
"""
