-- 0012: saved work is deduplicated (issue 23 point 4). An export whose
-- refs all point at objects the previous export of its sandbox already
-- holds keeps no second bundle: its directory's bundle is a hard link to
-- that export's file, and shares_bundle_of names the export whose save
-- first wrote the file (never a chain: a link of a link names the first).
-- The byte caps count each shared file once (COALESCE(shares_bundle_of,
-- id)). NULL: the export's files are its own, as before 0012.
ALTER TABLE exports ADD COLUMN shares_bundle_of TEXT;
