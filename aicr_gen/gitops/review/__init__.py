"""What a change does to a cluster, in a reviewer's words (pure): the change model (``model``), the changes
between two trees (``changes``), the high-risk ones (``risks``), both together (``compare``), the plan of a pull
request (``plan``) and the commit message of ``sync`` (``commit_message``)."""
