/* libnnopbase.so / libopapi.so: empty libraries that depend on libascendcl.so,
 * where every symbol lives. Linking or dlopen-ing them reaches the same runtime. */
int pa_shim_marker(void);
int pa_shim_marker(void) { return 0; }
