"""The small verbs (verify, list, precision, conventions); bench, report and
identify are packages of their own beside this one."""
