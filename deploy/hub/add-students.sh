#!/usr/bin/env bash
# add-students.sh makes the class's Unix accounts from a roster, as root:
#
#   bash deploy/hub/add-students.sh roster.txt
#
# roster.txt holds one user name per line (lower case letters, digits, _
# and -, starting with a letter; blank lines and # comments are skipped).
# Each new student gets a home of mode 700 (Debian's useradd would make it
# 755, readable by every classmate), /bin/bash, membership of the group
# allowed to log in (GPUMEM_STUDENT_GROUP, default students) and a random
# password (chpasswd). The new passwords go to roster.txt.passwords (mode
# 600, "name password" per line) for you to hand out; nothing else keeps
# them. A student who already exists keeps their password; their home is
# closed (700) and they are added to the group. Running it twice is safe.
set -euo pipefail
group=${GPUMEM_STUDENT_GROUP:-students}

die() {
	printf 'add-students: %s\n' "$*" >&2
	exit 1
}
[ $# -eq 1 ] || die "usage: add-students.sh ROSTER (one user name per line)"
roster=$1
[ "$(id -u)" -eq 0 ] || die "run as root: it makes Unix accounts."
[ -f "$roster" ] || die "no roster at $roster"
getent group "$group" >/dev/null || groupadd "$group"

passwords=$roster.passwords
umask 077
new=0 existing=0
while IFS= read -r line || [ -n "$line" ]; do
	name=${line%%#*}
	name=$(printf '%s' "$name" | tr -d '[:space:]')
	[ -n "$name" ] || continue
	[[ "$name" =~ ^[a-z][a-z0-9_-]{0,31}$ ]] || die "'$name' is not a user name this script makes (lower case letters, digits, _ and -, starting with a letter)"
	if id "$name" >/dev/null 2>&1; then
		[ "$(id -u "$name")" -ge 1000 ] || die "$name is a system account (uid $(id -u "$name")); not a student"
		usermod -a -G "$group" "$name"
		existing=$((existing + 1))
	else
		useradd -m -K HOME_MODE=0700 -s /bin/bash -G "$group" "$name"
		password=$(head -c 12 /dev/urandom | base64 | tr -d '/+=' | cut -c1-14)
		printf '%s:%s\n' "$name" "$password" | chpasswd
		printf '%s %s\n' "$name" "$password" >>"$passwords"
		new=$((new + 1))
	fi
	# Closed by the student's own uid: root follows no path a student owns.
	home=$(getent passwd "$name" | cut -d: -f6)
	setpriv --reuid="$name" --regid="$(id -g "$name")" --init-groups -- chmod go= -- "$home" ||
		die "could not close $name's home $home (is it theirs?)"
done <"$roster"
echo "add-students: $new new students (passwords in $passwords, mode 600), $existing already there; all in group $group with homes of mode 700"
