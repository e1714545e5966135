"""Curation: memories written on purpose (`remember`), corrected, pinned, retired and
consolidated, each change a revision that can be undone.

Who may change what (policy.py) is the one rule every interface goes through: the agent
and the consolidation pass never change a row a person wrote or edited, and only a person
pins or widens a memory to all projects (the agent may propose both).
"""
