#ifdef _MSC_VER
#define API __declspec(dllexport)
#else
#define API static inline
#endif

#ifdef EXPOSE_FOR_TESTS
#define TESTABLE
#else
#define TESTABLE static
#endif

API int hidden_helper(void) { return 1; }

TESTABLE int maybe_hidden(void) { return hidden_helper(); }
