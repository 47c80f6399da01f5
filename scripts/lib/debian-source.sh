# shellcheck shell=bash disable=SC2154  # cache and die are the caller's
# Debian source tarballs for the scripts that build real projects
# (corpus.sh, bench-runtime.sh). Sourced; the caller defines `cache` (the
# tarball cache folder) and `die` (prints its message and exits 2).

# Makes `apt-get source` work: adds a deb-src twin of debian.sources if no
# deb-src entry exists (root only), then refreshes the package lists.
ensure_deb_src() {
    local pkg=$1 list=/etc/apt/sources.list.d/debian.sources
    local src=/etc/apt/sources.list.d/sampler-corpus-deb-src.sources
    if [[ -n $(apt-cache showsrc --only-source "$pkg" 2>/dev/null) ]]; then
        return 0
    fi
    if ((EUID != 0)); then
        cat >&2 <<EOF
${0##*/}: apt has no source package '$pkg'. As root, add a deb-src entry:
  sed 's/^Types: deb\$/Types: deb-src/' $list > $src
  apt-get update
or put the orig tarball of '$pkg' into $cache yourself.
EOF
        exit 2
    fi
    if ! grep -rqsE --include='*.list' --include='*.sources' '^(Types:.*deb-src|deb-src )' \
        /etc/apt/sources.list /etc/apt/sources.list.d/; then
        [[ -r $list ]] || die "no $list to mirror; add a deb-src entry by hand"
        echo "==> adding deb-src entry $src (mirrors $list)"
        sed 's/^Types: deb$/Types: deb-src/' "$list" >"$src"
    fi
    echo "==> apt-get update"
    apt-get update -qq
    [[ -n $(apt-cache showsrc --only-source "$pkg" 2>/dev/null) ]] ||
        die "apt still has no source package '$pkg' after adding deb-src"
}

# Prints the path of the cached upstream tarball of source package $1,
# downloading it first if needed. (sqlite3 also has an orig-www tarball, the
# documentation, which the pattern leaves out.)
fetch_orig() {
    local pkg=$1 tarball tmp
    tarball=$(find "$cache" -maxdepth 1 -name "${pkg}_*.orig.tar.*" ! -name '*.asc' | sort -V | tail -n 1)
    if [[ -z $tarball ]]; then
        ensure_deb_src "$pkg" >&2
        tmp=$(mktemp -d "$cache/.download.XXXXXX")
        echo "==> apt-get source --download-only $pkg (into $cache)" >&2
        # apt warns that it downloads unsandboxed as root: harmless.
        (cd "$tmp" && apt-get source --download-only -qq "$pkg") >&2
        mv "$tmp"/* "$cache"/
        rmdir "$tmp"
        tarball=$(find "$cache" -maxdepth 1 -name "${pkg}_*.orig.tar.*" ! -name '*.asc' | sort -V | tail -n 1)
        [[ -n $tarball ]] || die "no ${pkg}_*.orig.tar.* after apt-get source"
    fi
    echo "$tarball"
}
