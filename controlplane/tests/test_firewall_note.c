/* test_firewall_note.c: the note a serve that is not root trusts to know
 * the host-edge firewall is in place (ops/firewall_note.c). Written and
 * read back; and every way a user could forge or weaken it is refused: a
 * note or directory writable by others, owned by someone else, a symlink,
 * another fingerprint, an oversized or empty note. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/ops.h"

#define FP "chat2sbx host edge v1 0123456789abcdef"

static char root[256], dir[300], note[340];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/c2s-note-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/run", root);
	snprintf(note, sizeof(note), "%s/firewall", dir);
	struct cp_error *err = NULL;
	mode_t was = umask(077); /* as under the firewall unit: still readable by all */
	cr_assert_eq(ops_firewall_note_write(note, FP, &err), 0, "%s", err ? err->message : "");
	umask(was);
}

static void teardown(void)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", root, root);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(firewall_note, .init = setup, .fini = teardown);

static void refused(const char *fp, uid_t uid, const char *words)
{
	char detail[1024];
	cr_expect_eq(ops_firewall_note_check(note, fp, uid, detail, sizeof(detail)), 0, "trusted: %s", detail);
	cr_expect(strstr(detail, words) != NULL, "'%s' in: %s", words, detail);
}

Test(firewall_note, written_note_is_trusted_with_its_fingerprint)
{
	char detail[1024];
	cr_expect_eq(ops_firewall_note_check(note, FP, getuid(), detail, sizeof(detail)), 1, "%s", detail);
	cr_expect(strstr(detail, FP) != NULL, "%s", detail);
	struct stat st;
	cr_assert_eq(stat(note, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0644);
	cr_assert_eq(stat(dir, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0755);
}

Test(firewall_note, another_fingerprint_is_refused)
{
	refused("chat2sbx host edge v1 fedcba9876543210", getuid(), "names another ruleset");
	refused("chat2sbx host edge v1 0123456789abcde", getuid(), "names another ruleset"); /* a prefix */
}

Test(firewall_note, a_note_of_another_owner_is_refused)
{
	refused(FP, getuid() + 1, "belongs to uid");
}

Test(firewall_note, a_note_writable_by_others_is_refused)
{
	cr_assert_eq(chmod(note, 0666), 0);
	refused(FP, getuid(), "writable by others");
	cr_assert_eq(chmod(note, 0664), 0);
	refused(FP, getuid(), "writable by others");
}

Test(firewall_note, a_directory_writable_by_others_is_refused)
{
	/* Anyone could then replace the note by a file of their own. */
	cr_assert_eq(chmod(dir, 01777), 0);
	refused(FP, getuid(), "directory");
}

Test(firewall_note, a_symlink_is_refused)
{
	char forged[400];
	snprintf(forged, sizeof(forged), "%s/forged", root);
	cr_assert_eq(rename(note, forged), 0);
	cr_assert_eq(symlink(forged, note), 0);
	refused(FP, getuid(), "no firewall note");
	/* The directory itself a symlink to a good one. */
	char moved[400];
	snprintf(moved, sizeof(moved), "%s/real", root);
	cr_assert_eq(unlink(note), 0);
	cr_assert_eq(rename(forged, note), 0);
	cr_assert_eq(rename(dir, moved), 0);
	cr_assert_eq(symlink(moved, dir), 0);
	refused(FP, getuid(), "not a directory");
}

Test(firewall_note, missing_empty_and_oversized_notes_are_refused)
{
	cr_assert_eq(unlink(note), 0);
	refused(FP, getuid(), "no firewall note");
	int fd = open(note, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	refused(FP, getuid(), "names no fingerprint");
	char big[5000];
	memset(big, '#', sizeof(big));
	cr_assert_eq(write(fd, "fingerprint=" FP "\n", strlen("fingerprint=" FP "\n")),
	             (ssize_t)strlen("fingerprint=" FP "\n"));
	cr_assert_eq(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	close(fd);
	refused(FP, getuid(), "over 4096 bytes");
}

Test(firewall_note, a_fifo_is_refused_without_blocking)
{
	cr_assert_eq(unlink(note), 0);
	cr_assert_eq(mkfifo(note, 0644), 0);
	refused(FP, getuid(), "not a regular file");
}
