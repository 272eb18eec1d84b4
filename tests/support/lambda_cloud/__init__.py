"""A small extra target, registered by tests only: ``lambda`` (a Python keyword, so its
package is named otherwise). Its nodes are directories on this machine, as ``local``'s,
applied by terraform; its two regions are its own offers, and the cheaper one is out of
capacity (the stack's node command fails with the cloud's words), so a launch fails
over to the other. Nothing outside this folder knows it: the tests register it."""
