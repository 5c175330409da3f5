# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Allocator names with afmalloc module parameters, for the benchmarks that
# run inside the guest (bench/churn/churn-guest.sh, bench/untar-remove.sh):
#
#   BASE[+WORD]...   BASE zsmalloc, afmalloc/slab or afmalloc/zspage
#
# A WORD NAME=VALUE is an afmalloc module parameter
# (/sys/module/afmalloc/parameters/NAME, afmalloc/slab and afmalloc/zspage
# only): afm_set_params writes it and keeps the old value, afm_restore_params
# writes the old values back, last set first (a name given twice ends as it
# was). Any other WORD is a flag of the benchmark (untar-remove.sh's
# "compact"), named to afm_check_alloc. The full name labels rows and files,
# so that a setting runs beside the default and zsmalloc in one boot.
#
# The caller defines die MSG (print, exit non-zero); afm_set_params reports
# each value it writes through ${AFM_NOTE:-echo}.

AFM_PAR=${AFM_PAR:-/sys/module/afmalloc/parameters}
AFM_SAVED=()

# afm_base ALLOC: the allocator, without its words.
afm_base() { echo "${1%%+*}"; }

# afm_words ALLOC: its words, one a line (none for a bare allocator).
afm_words() { [ "$1" = "${1#*+}" ] || tr + '\n' <<< "${1#*+}"; }

# afm_has ALLOC WORD: whether ALLOC carries the flag WORD.
afm_has() { afm_words "$1" | grep -qxF -- "$2"; }

# afm_check_alloc ALLOC [FLAG...]: die unless ALLOC is a known allocator
# whose words are FLAGs or NAME=VALUE parameters; with --guest first, each
# NAME must also be a writable parameter of the running kernel's afmalloc.
afm_check_alloc() {
	local guest=0 a w b flags
	[ "$1" != --guest ] || { guest=1; shift; }
	a=$1; shift
	flags=" $* "
	b=$(afm_base "$a")
	case "$b" in zsmalloc|afmalloc/slab|afmalloc/zspage) ;;
	*) die "unknown allocator '$a' (known: zsmalloc, afmalloc/slab, afmalloc/zspage, the afmalloc ones with +NAME=VALUE module parameters${1:+; flags: $*})" ;;
	esac
	while read -r w; do
		if [[ "$w" == *=* ]]; then
			[ "$b" != zsmalloc ] || die "'$a': zsmalloc takes no afmalloc parameters"
			[[ "$w" =~ ^[a-z_0-9]+=[^=]+$ ]] || die "'$a': '$w' is not NAME=VALUE"
			[ "$guest" = 0 ] || [ -w "$AFM_PAR/${w%%=*}" ] ||
				die "'$a': no writable afmalloc parameter ${w%%=*} ($AFM_PAR)"
		else
			[[ "$flags" == *" $w "* ]] || [ -z "$w" ] ||
				die "'$a': unknown word '$w' (flags here:${flags% }; parameters are NAME=VALUE)"
		fi
	done < <(afm_words "$a")
}

# afm_set_params ALLOC: write its parameters, keeping the old values.
afm_set_params() {
	local w n
	while read -r w; do
		[[ "$w" == *=* ]] || continue
		n=${w%%=*}
		AFM_SAVED+=("$n=$(cat "$AFM_PAR/$n")")
		echo "${w#*=}" > "$AFM_PAR/$n" || die "afmalloc.$w refused"
		${AFM_NOTE:-echo} "afmalloc.$n=$(cat "$AFM_PAR/$n") (was ${AFM_SAVED[-1]#*=})"
	done < <(afm_words "$1")
}

# afm_restore_params: the values afm_set_params replaced, last set first.
afm_restore_params() {
	local k p
	for ((k = ${#AFM_SAVED[@]} - 1; k >= 0; k--)); do
		p=${AFM_SAVED[k]}
		echo "${p#*=}" > "$AFM_PAR/${p%%=*}" ||
			${AFM_NOTE:-echo} "cannot restore afmalloc.$p"
	done
	AFM_SAVED=()
}
