static int helper(void) { return 1; }

int a_entry(void) { return helper(); }

static int a_only(void) { return 3; }
