/* not UTF-8: café */
static int helper(void) { return 2; }

int b_entry(void) { return helper() + a_entry(); }
