/* cmd_service.c: `chat2sbx setup --install-service | --uninstall-service |
 * --print-service`: a systemd user unit that runs `chat2sbx serve` at login
 * and restarts it on failure. The unit holds no secret: serve reads the
 * tunnel id and key from SECRET_DIR itself. Without a systemd user manager
 * the unit is still written (so it can be installed by hand or checked) and
 * the command says so and exits nonzero. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "base/xalloc.h"

#define SERVICE_NAME "chat2sbx.service"

extern char **environ;

/* Environment= lines for the CHAT2SBX_* settings set in this process's
 * environment (setup runs with the settings the user serves with; the
 * service manager would start serve without them). Test-only settings are
 * never carried. Values are quoted for systemd.exec(5): '"' and '\\' are
 * escaped, '%' is doubled (specifier escape). Caller frees; NULL on OOM. */
static char *service_environment(void)
{
	struct config_env env = config_env_process();
	size_t n = 0;
	const struct config_setting_info *infos = config_settings(&n);
	char *out = xstrdup("");
	for (size_t i = 0; out && i < n; i++) {
		const char *name = infos[i].env;
		const char *v = env.get(env.userdata, name);
		if (!v || infos[i].test_only)
			continue;
		size_t len = strlen(out), vlen = strlen(v);
		char *grown = xrealloc(out, len + strlen(name) + 2 * vlen + 32);
		if (!grown) {
			free(out);
			return NULL;
		}
		out = grown;
		char *p = out + len;
		p += sprintf(p, "Environment=\"%s=", name);
		for (const char *c = v; *c; c++) {
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			else if (*c == '%')
				*p++ = '%';
			if (*c != '\n')
				*p++ = *c;
		}
		p += sprintf(p, "\"\n");
	}
	return out;
}

/* The unit's text for the binary exe serving from workdir, with the
 * settings of this process's environment. Caller frees; NULL on OOM. */
static char *service_unit(const char *exe, const char *workdir)
{
	char *environment = service_environment();
	if (!environment)
		return NULL;
	char *text =
	    cli_service_unit(exe, workdir, environment,
	                     "Written by 'chat2sbx setup --install-service'; remove with --uninstall-service.");
	free(environment);
	return text;
}

/* Runs systemctl --user ARGS...; returns its exit status, 127 when it
 * cannot be started (not installed). */
static int systemctl_user(const char *a1, const char *a2, const char *a3)
{
	char *argv[] = {"systemctl", "--user", (char *)a1, (char *)a2, (char *)a3, NULL};
	pid_t pid;
	if (posix_spawnp(&pid, "systemctl", NULL, NULL, argv, environ) != 0)
		return 127;
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int unit_path(char *buf, size_t size)
{
	struct config_env env = config_env_process();
	char dir[PATH_MAX];
	const char *parts[] = {"/.config", "/.config/systemd", "/.config/systemd/user"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(dir, sizeof(dir), "%s%s", env.home, parts[i]);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -1;
	}
	snprintf(buf, size, "%s/" SERVICE_NAME, dir);
	return 0;
}

static int no_systemd(const char *what, const char *path)
{
	fprintf(stderr,
	        "chat2sbx: systemd's user manager is not available here ('systemctl --user %s' failed), so the "
	        "service is not enabled; the unit is written at %s. Run 'chat2sbx serve' under your own "
	        "supervisor, or where systemd runs: 'systemctl --user daemon-reload && systemctl --user enable "
	        "--now chat2sbx'\n",
	        what, path);
	return 6;
}

int cli_setup_service(struct cli *cli, const char *action)
{
	(void)cli;
	char exe[PATH_MAX], cwd[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || !getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "chat2sbx: cannot find this binary's path or the working directory: %s\n",
		        strerror(errno));
		return 1;
	}
	exe[n] = '\0';
	char *text = service_unit(exe, cwd);
	if (!text)
		return 1;
	if (!strcmp(action, "print-service")) {
		fputs(text, stdout);
		free(text);
		return 0;
	}
	if (unit_path(path, sizeof(path)) < 0) {
		fprintf(stderr, "chat2sbx: cannot create ~/.config/systemd/user: %s\n", strerror(errno));
		free(text);
		return 1;
	}
	if (!strcmp(action, "uninstall-service")) {
		free(text);
		int st = systemctl_user("disable", "--now", SERVICE_NAME);
		if (unlink(path) < 0 && errno != ENOENT) {
			fprintf(stderr, "chat2sbx: remove '%s': %s\n", path, strerror(errno));
			return 1;
		}
		printf("removed %s\n", path);
		if (st != 0) {
			/* Without a user manager nothing can have been enabled: the
			 * file was all there was to remove. */
			printf("systemd's user manager is not available here, so there was no running service to "
			       "stop\n");
			return 0;
		}
		systemctl_user("daemon-reload", NULL, NULL);
		printf("the service is stopped and disabled\n");
		return 0;
	}
	FILE *f = fopen(path, "we");
	int failed = !f;
	if (f) {
		/* The stream is closed whatever fputs did (a failed write still holds it). */
		failed = fputs(text, f) < 0;
		failed |= fclose(f) != 0;
	}
	if (failed) {
		fprintf(stderr, "chat2sbx: write '%s': %s\n", path, strerror(errno));
		free(text);
		return 1;
	}
	free(text);
	printf("wrote %s (ExecStart=%s serve, WorkingDirectory=%s)\n", path, exe, cwd);
	fflush(stdout);
	if (systemctl_user("daemon-reload", NULL, NULL) != 0)
		return no_systemd("daemon-reload", path);
	if (systemctl_user("enable", "--now", SERVICE_NAME) != 0)
		return no_systemd("enable --now " SERVICE_NAME, path);
	printf("the service is enabled and started\n"
	       "logs:   journalctl --user -u chat2sbx -f\n"
	       "state:  chat2sbx status\n"
	       "to keep it running while you are logged out: loginctl enable-linger $USER\n");
	return 0;
}
