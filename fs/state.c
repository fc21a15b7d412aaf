/*
 * state.c - the mount's one instance of struct fs_state (fs.h): the
 * session, who mounted it, when, and the debug switch.  Nothing else.
 */
#include "fs.h"

struct fs_state fs;
