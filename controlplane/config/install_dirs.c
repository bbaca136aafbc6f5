/* install_dirs.c: where chat2sbx's own files are, as compiled in. The only
 * file built twice: once for the binary in the source tree's build/ (no
 * -D: the directories are found from the binary's own location, as before
 * issue 25) and once for `make install` (-DCHAT2SBX_LIB_DIR and
 * -DCHAT2SBX_DATA_DIR from PREFIX, absolute).
 *
 * Why two builds rather than one binary guessing whether it sits in a
 * checkout: an installed binary must never take its helper (mounted into
 * every sandbox) from a directory it merely happens to find next to
 * itself, and a guess is a rule nobody can see; a build says what it is.
 * The source tree's build keeps today's behaviour exactly (EXE_DIR, so a
 * moved checkout still works). Neither ever looks at the working
 * directory. */
#include "config.h"

#ifdef CHAT2SBX_LIB_DIR
const char config_default_lib_dir[] = CHAT2SBX_LIB_DIR;
const char config_default_data_dir[] = CHAT2SBX_DATA_DIR;
const int config_installed = 1;
#else
/* build/chat2sbx: the helper and chat2sbx-vm are beside it, the template
 * inputs and .env.example in the tree above it. */
const char config_default_lib_dir[] = "${EXE_DIR}";
const char config_default_data_dir[] = "${SOURCE_TREE}";
const int config_installed = 0;
#endif
