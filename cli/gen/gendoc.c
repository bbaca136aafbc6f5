/* gendoc.c: writes the files generated from chat2sbx's tables, so each fact
 * is written once (issue 25): chat2sbx(1)'s COMMANDS from the CLI's help
 * table (cli/help.c), chat2sbx.conf(5)'s SETTINGS from the settings table
 * (config/config.c, as .env.example is checked against it), the bash
 * completion from the help table, and the systemd user unit `make install`
 * ships from the text `setup --install-service` writes (cli/service_unit.c).
 * A build tool: never installed, reads stdin, writes stdout.
 *
 *   gendoc man1 < man/chat2sbx.1.scd      (replaces the line %COMMANDS%)
 *   gendoc man5 < man/chat2sbx.conf.5.scd (replaces the line %SETTINGS%)
 *   gendoc completion
 *   gendoc unit BINDIR */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "config/config.h"

/* scdoc's inline markup characters, escaped (scdoc(5)). */
static void put_scd(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '*' || *s == '_')
			putchar('\\');
		putchar(*s);
	}
}

static void commands_section(void)
{
	for (size_t i = 0; cli_help[i].name; i++) {
		printf("## %s\n\n```\n", cli_help[i].name);
		/* The help text as --help prints it, in a literal block so its
		 * columns survive; the man-page check compares the two. */
		for (const char *p = cli_help[i].usage; *p;) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			printf("%.*s\n", (int)n, p);
			p += n + (nl != NULL);
		}
		printf("```\n\n");
	}
}

static void settings_section(void)
{
	size_t n = 0;
	const struct config_setting_info *s = config_settings(&n);
	for (size_t i = 0; i < n; i++) {
		printf("*");
		put_scd(s[i].env);
		printf("*");
		if (strcmp(s[i].yaml_key, "-")) {
			printf(" (config.yaml: ");
			put_scd(s[i].yaml_key);
			printf(")");
		}
		printf("\n\t");
		put_scd(s[i].help);
		printf(".\n\n\tDefault: ");
		put_scd(s[i].default_text[0] ? s[i].default_text : "(empty)");
		printf(".%s\n\n", s[i].test_only  ? " For tests only; read only from the process environment."
		                  : s[i].env_only ? " Read only from the process environment."
		                                  : "");
	}
}

/* Copies stdin to stdout, the line MARK replaced by section(). */
static int fill(const char *mark, void (*section)(void))
{
	char line[4096];
	int found = 0;
	while (fgets(line, sizeof(line), stdin)) {
		size_t len = strlen(line);
		if (len && line[len - 1] == '\n')
			line[len - 1] = '\0';
		if (!strcmp(line, mark)) {
			section();
			found = 1;
		} else {
			puts(line);
		}
	}
	if (!found)
		fprintf(stderr, "gendoc: the template has no line %s\n", mark);
	return found ? 0 : 1;
}

/* A word of a usage line worth completing: an option (--json, its ']' and
 * ',' dropped) or a lowercase subcommand. */
static void add_word(char *list, size_t size, const char *w, size_t n)
{
	while (n && (w[n - 1] == ']' || w[n - 1] == ',' || w[n - 1] == ')'))
		n--;
	if (w[0] == '[')
		w++, n--;
	if (!n || !(w[0] == '-' || islower((unsigned char)w[0])))
		return;
	if (w[0] == '-' && n < 3)
		return;
	for (size_t k = 0; k < n; k++)
		if (!(isalnum((unsigned char)w[k]) || w[k] == '-'))
			return;
	char word[64];
	snprintf(word, sizeof(word), " %.*s ", (int)n, w);
	char padded[2048];
	snprintf(padded, sizeof(padded), " %s ", list);
	if (strstr(padded, word))
		return;
	size_t len = strlen(list);
	snprintf(list + len, size - len, "%s%.*s", len ? " " : "", (int)n, w);
}

/* The words of NAME's synopsis lines: the lines that start with NAME, up to
 * the explanation (two spaces or more). */
static void command_words(const struct cli_help *h, char *subs, char *opts, size_t size)
{
	subs[0] = opts[0] = '\0';
	for (const char *p = h->usage; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *q = p;
		while (q < p + n && *q == ' ')
			q++;
		size_t name_len = strlen(h->name);
		if (!strncmp(q, h->name, name_len) && (q[name_len] == ' ' || q + name_len == p + n)) {
			q += name_len;
			for (int first = 1; q < p + n;) {
				const char *gap = q;
				while (q < p + n && *q == ' ')
					q++;
				/* Two spaces or more: the explanation starts. */
				if (q - gap >= 2)
					break;
				const char *w = q;
				while (q < p + n && *q != ' ')
					q++;
				if (q == w)
					break;
				if (w[0] == '-' || (w[0] == '[' && w[1] == '-'))
					add_word(opts, size, w, (size_t)(q - w));
				else if (first)
					add_word(subs, size, w, (size_t)(q - w));
				first = 0;
			}
		}
		/* Options named in the explanation, "(--uninstall-service, ...)". */
		for (const char *o = strstr(p, "--"); o && o < p + n; o = strstr(o + 2, "--")) {
			const char *e = o;
			while (e < p + n && (isalnum((unsigned char)*e) || *e == '-'))
				e++;
			add_word(opts, size, o, (size_t)(e - o));
			o = e - 2;
		}
		p += n + (nl != NULL);
	}
}

static void completion(void)
{
	printf("# bash completion for chat2sbx, generated from its help table (cli/help.c) by gendoc.\n"
	       "_chat2sbx() {\n"
	       "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" words=\"\"\n"
	       "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
	       "    words=\"");
	for (size_t i = 0; cli_help[i].name; i++)
		printf("%s%s", i ? " " : "", cli_help[i].name);
	printf(" --help --version\"\n  else\n    case \"${COMP_WORDS[1]}\" in\n");
	for (size_t i = 0; cli_help[i].name; i++) {
		char subs[1024], opts[1024];
		command_words(&cli_help[i], subs, opts, sizeof(subs));
		if (!strcmp(cli_help[i].name, "help") || !strcmp(cli_help[i].name, "version"))
			continue;
		printf("      %s)\n", cli_help[i].name);
		if (subs[0])
			printf("        if [ \"$COMP_CWORD\" -eq 2 ]; then words=\"%s --help\"; else words=\"%s\"; fi "
			       ";;\n",
			       subs, opts);
		else
			printf("        words=\"%s%s--help\" ;;\n", opts, opts[0] ? " " : "");
	}
	printf("    esac\n  fi\n"
	       "  mapfile -t COMPREPLY < <(compgen -W \"$words\" -- \"$cur\")\n"
	       "  # Paths for the arguments that take one (workspace add PATH, export apply --to DIR).\n"
	       "  [ ${#COMPREPLY[@]} -eq 0 ] && [ \"${cur#-}\" = \"$cur\" ] && mapfile -t COMPREPLY < <(compgen -f -- "
	       "\"$cur\")\n"
	       "  return 0\n"
	       "}\n"
	       "complete -F _chat2sbx chat2sbx\n");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "man1"))
		return fill("%COMMANDS%", commands_section);
	if (argc == 2 && !strcmp(argv[1], "man5"))
		return fill("%SETTINGS%", settings_section);
	if (argc == 2 && !strcmp(argv[1], "completion")) {
		completion();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "unit")) {
		char exe[4096];
		snprintf(exe, sizeof(exe), "%s/chat2sbx", argv[2]);
		char *text = cli_service_unit(exe, "%h", "",
		                              "Installed with chat2sbx; enable it with 'systemctl --user enable --now "
		                              "chat2sbx' (or 'chat2sbx setup --install-service').");
		fputs(text, stdout);
		free(text);
		return 0;
	}
	fprintf(stderr, "usage: gendoc man1|man5|completion|unit BINDIR\n");
	return 2;
}
